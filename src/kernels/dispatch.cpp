// Runtime ISA choice: what the CPU supports (cpuid, including the OS's saving of the
// wider registers, as GCC's __builtin_cpu_supports checks), what FFN_ISA or set_isa()
// asks for, and the kernel table for each ISA.
#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "ffn/error.hpp"
#include "kernels/kernels.hpp"

namespace ffn {
namespace {

constexpr int kUnset = -1;

// F16C (CPUID leaf 1, ECX bit 29), read directly: clang's __builtin_cpu_supports has no
// "f16c". Its registers are AVX's, whose OS support the AVX2 check already covers. Read
// once: in a virtual machine cpuid traps to the hypervisor (microseconds), and the kernel
// table — hence this check — is consulted on every kernel call.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  }();
  return has;
}

// AVX512_BF16 (CPUID leaf 7 sub-leaf 1, EAX bit 5), read once for the same reasons.
bool cpu_has_avx512_bf16() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
  }();
  return has;
}

std::atomic<int> g_active{kUnset};
std::once_flag g_env_once;

Isa widest_supported() {
  Isa best = Isa::scalar;
  for (Isa i : supported_isas()) best = i;
  return best;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512_bf16: return "avx512_bf16";
  }
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_bf16})
    if (isa_name(i) == name) return i;
  throw Error("ISA '" + std::string(name) + "' is unknown; accepted: scalar, avx2, avx512, avx512_bf16");
}

bool isa_supported(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::scalar: return true;
    // F16C (vcvtph2ps, the f16 weights' widening) came before AVX2 on every x86 CPU.
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma") && cpu_has_f16c();
    // Its file also uses AVX-512BW/VL (masked 16-bit stores).
    case Isa::avx512_bf16:
      return isa_supported(Isa::avx512) && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && cpu_has_avx512_bf16();
  }
  return false;
}

bool avx512_vnni_supported() {
  __builtin_cpu_init();
  return isa_supported(Isa::avx512) && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512_bf16})
    if (isa_supported(i)) out.push_back(i);
  return out;
}

void set_isa(Isa isa) {
  if (!isa_supported(isa))
    throw Error("ISA " + std::string(isa_name(isa)) + " is not supported by this CPU");
  g_active.store(static_cast<int>(isa));
}

Isa active_isa() {
  std::call_once(g_env_once, [] {
    if (g_active.load() != kUnset) return;  // set_isa() came first
    const char* env = std::getenv("FFN_ISA");
    if (env && *env) {
      const Isa want = parse_isa(env);
      if (!isa_supported(want))
        throw Error("FFN_ISA=" + std::string(env) + ": this CPU does not support it");
      g_active.store(static_cast<int>(want));
    } else {
      g_active.store(static_cast<int>(widest_supported()));
    }
  });
  return static_cast<Isa>(g_active.load());
}

namespace kernels {

const KernelTable& kernel_table(Isa isa) {
  static const KernelTable scalar{Isa::scalar, 1, 12, "f32_gemm_nt_scalar", f32_gemm_nt_scalar,
                                  "f32_gemm_nt_scalar", f32_gemm_nt_scalar,
                                  "f32_panel_gemm_scalar", f32_panel_gemm_scalar,
                                  "half_panel_gemm_scalar", half_panel_gemm_scalar, f32_fma_roof_scalar,
                                  "f32_gemm_nn_scalar", f32_gemm_nn_scalar,
                                  "f32_gemm_tn_add_scalar", f32_gemm_tn_add_scalar,
                                  "half_gemm_nt_scalar", half_gemm_nt_scalar,
                                  "q_gemm_nt_scalar", q_gemm_nt_scalar,
                                  "q_panel_gemm_scalar", q_panel_gemm_scalar, widen_rows_scalar,
                                  rows_to_panel32_scalar, rows_to_panel16_scalar, stream_read_scalar};
  static const KernelTable avx2{Isa::avx2, 8, 12, "f32_gemm_nt_avx2_3x3", f32_gemm_nt_avx2_3x3,
                                "f32_gemm_nt_packed_avx2_6x16", f32_gemm_nt_packed_avx2_6x16,
                                "f32_panel_gemm_avx2_2x64_3x32_6x16", f32_panel_gemm_avx2_2x64_3x32_6x16,
                                "half_panel_gemm_avx2_2x64_6x16", half_panel_gemm_avx2_2x64_6x16, f32_fma_roof_avx2,
                                "f32_gemm_nn_avx2_6x16", f32_gemm_nn_avx2_6x16,
                                "f32_gemm_tn_add_avx2_6x16", f32_gemm_tn_add_avx2_6x16,
                                "half_gemm_nt_avx2_3x3", half_gemm_nt_avx2_3x3,
                                "q_gemm_nt_avx2_2x2", q_gemm_nt_avx2_2x2,
                                "q_panel_gemm_avx2_1x64", q_panel_gemm_avx2_1x64, widen_rows_avx2,
                                rows_to_panel32_avx2, rows_to_panel16_avx2, stream_read_avx2};
  static const KernelTable avx512{Isa::avx512, 16, 24, "f32_gemm_nt_avx512_4x4", f32_gemm_nt_avx512_4x4,
                                  "f32_gemm_nt_packed_avx512_6x64", f32_gemm_nt_packed_avx512_6x64,
                                  "f32_panel_gemm_avx512_8x64_6x64", f32_panel_gemm_avx512_8x64_6x64,
                                  "half_panel_gemm_avx512_6x64", half_panel_gemm_avx512_6x64, f32_fma_roof_avx512,
                                  "f32_gemm_nn_avx512_8x32", f32_gemm_nn_avx512_8x32,
                                  "f32_gemm_tn_add_avx512_8x32", f32_gemm_tn_add_avx512_8x32,
                                  "half_gemm_nt_avx512_4x4", half_gemm_nt_avx512_4x4,
                                  avx512_vnni_supported() ? "q_gemm_nt_avx512vnni_4x4" : "q_gemm_nt_avx2_2x2",
                                  avx512_vnni_supported() ? q_gemm_nt_avx512vnni_4x4 : q_gemm_nt_avx2_2x2,
                                  avx512_vnni_supported() ? "q_panel_gemm_avx512vnni_2x64" : "q_panel_gemm_avx2_1x64",
                                  avx512_vnni_supported() ? q_panel_gemm_avx512vnni_2x64 : q_panel_gemm_avx2_1x64,
                                  widen_rows_avx2, rows_to_panel32_avx2, rows_to_panel16_avx2, stream_read_avx512};
  // The avx512 table plus the bf16 dot product (built on first use: only on CPUs that have it).
  static const KernelTable avx512_bf16 = [] {
    KernelTable t = avx512;
    t.isa = Isa::avx512_bf16;
    t.bf16_dot_panel_gemm_name = "bf16_dot_panel_gemm_avx512bf16_6x64";
    t.bf16_dot_panel_gemm = bf16_dot_panel_gemm_avx512bf16_6x64;
    t.f32_to_bf16_rows = f32_to_bf16_rows_avx512bf16;
    t.bf16_dot_roof = bf16_dot_roof_avx512bf16;
    return t;
  }();
  if (!isa_supported(isa))
    throw Error("ISA " + std::string(isa_name(isa)) + " is not supported by this CPU");
  switch (isa) {
    case Isa::avx2: return avx2;
    case Isa::avx512: return avx512;
    case Isa::avx512_bf16: return avx512_bf16;
    case Isa::scalar: break;
  }
  return scalar;
}

const KernelTable& active_kernels() { return kernel_table(active_isa()); }

}  // namespace kernels

bool bf16_dot_products_active() { return kernels::active_kernels().bf16_dot_panel_gemm != nullptr; }

}  // namespace ffn
