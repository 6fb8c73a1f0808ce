// Runtime ISA choice: what the CPU supports (cpuid, including the OS's saving of the
// wider registers, as GCC's __builtin_cpu_supports checks), read once, and what FFN_ISA or
// set_isa() asks for.
#include "ffn/isa.hpp"

#include <cpuid.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "ffn/error.hpp"

namespace ffn {
namespace {

constexpr int kUnset = -1;
// Narrowest first: the widest supported is the last of these the CPU has.
constexpr std::array kAllIsas = {Isa::scalar,      Isa::avx2,        Isa::avx2_vnni,
                                 Isa::avx512,      Isa::avx512_vnni, Isa::avx512_bf16};

// F16C (CPUID leaf 1, ECX bit 29), read directly: clang's __builtin_cpu_supports has no
// "f16c". Its registers are AVX's, whose OS support the AVX2 check already covers.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// AVX512_BF16 (CPUID leaf 7 sub-leaf 1, EAX bit 5).
bool cpu_has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
}

// AVX-VNNI, the VEX-coded vpdpbusd (CPUID leaf 7 sub-leaf 1, EAX bit 4), read directly as
// AVX512_BF16 is; its registers are AVX's.
bool cpu_has_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
}

// Each level requires the one it builds on (isa.hpp): avx2_vnni and avx512 both build on
// avx2, so a CPU may have either without the other.
bool cpu_supports(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::scalar:
      return true;
    // F16C (vcvtph2ps, the f16 weights' widening) came before AVX2 on every x86 CPU.
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::avx2_vnni:
      return cpu_supports(Isa::avx2) && cpu_has_avx_vnni();
    case Isa::avx512:
      return cpu_supports(Isa::avx2) && __builtin_cpu_supports("avx512f");
    // The VNNI files also use AVX-512BW/VL (byte shuffles, masked stores).
    case Isa::avx512_vnni:
      return cpu_supports(Isa::avx512) && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
    // Every CPU with AVX512_BF16 has VNNI; its file uses BW/VL too (masked 16-bit stores).
    case Isa::avx512_bf16:
      return cpu_supports(Isa::avx512_vnni) && cpu_has_avx512_bf16();
  }
  return false;
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
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx2_vnni:
      return "avx2_vnni";
    case Isa::avx512:
      return "avx512";
    case Isa::avx512_vnni:
      return "avx512_vnni";
    case Isa::avx512_bf16:
      return "avx512_bf16";
  }
  return "?";
}

Isa parse_isa(std::string_view name) {
  for (Isa i : kAllIsas)
    if (isa_name(i) == name) return i;
  throw Error("ISA '" + std::string(name) + "' is unknown; accepted: scalar, avx2, avx2_vnni, avx512, avx512_vnni, avx512_bf16");
}

// Asked once: in a virtual machine cpuid traps to the hypervisor (microseconds), and the
// kernel table is looked up on every kernel call.
bool isa_supported(Isa isa) {
  static const std::array<bool, kAllIsas.size()> supported = [] {
    std::array<bool, kAllIsas.size()> s{};
    for (Isa i : kAllIsas) s[static_cast<size_t>(i)] = cpu_supports(i);
    return s;
  }();
  const auto i = static_cast<size_t>(isa);
  return i < supported.size() && supported[i];
}

bool avx512_vnni_supported() { return isa_supported(Isa::avx512_vnni); }

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa i : kAllIsas)
    if (isa_supported(i)) out.push_back(i);
  return out;
}

void set_isa(Isa isa) {
  if (!isa_supported(isa)) throw Error("ISA " + std::string(isa_name(isa)) + " is not supported by this CPU");
  g_active.store(static_cast<int>(isa));
}

Isa active_isa() {
  std::call_once(g_env_once, [] {
    if (g_active.load() != kUnset) return;  // set_isa() came first
    const char* env = std::getenv("FFN_ISA");
    if (env && *env) {
      const Isa want = parse_isa(env);
      if (!isa_supported(want)) throw Error("FFN_ISA=" + std::string(env) + ": this CPU does not support it");
      g_active.store(static_cast<int>(want));
    } else {
      g_active.store(static_cast<int>(widest_supported()));
    }
  });
  return static_cast<Isa>(g_active.load());
}

}  // namespace ffn
