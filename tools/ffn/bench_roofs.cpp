// The roofs ffn bench judges rows against (bench_roofs.hpp).
#include "bench_roofs.hpp"

#include <cstdio>
#include <string>

#include "ffn/isa.hpp"
#include "ffn/weight_type.hpp"
#include "format.hpp"
#include "measure/roofs.hpp"

namespace ffn::cli {

const ComputeRoof kFmaRoof{"f32_fma", &MeasuredRoofs::compute, measure_compute_roof_gflops};
const ComputeRoof kBf16DotRoof{"bf16_dot", &MeasuredRoofs::bf16_dot, measure_bf16_dot_roof_gflops};
const ComputeRoof kInt8DotRoof{"int8_dot", &MeasuredRoofs::int8_dot, measure_int8_dot_roof_gops};

const ComputeRoof& compute_roof_of(const MatrixTypes& types) {
  auto all_take = [&](auto pred) {
    for (WeightType t : {types.gate, types.up, types.down})
      if (!pred(weight_type_kernel(t, active_isa()).activations)) return false;
    return true;
  };
  if (all_take([](WeightType a) { return a == WeightType::q8_0 || a == WeightType::q8_K; })) return kInt8DotRoof;
  if (all_take([](WeightType a) { return a == WeightType::bf16; })) return kBf16DotRoof;
  return kFmaRoof;
}

const ComputeRoof& compute_roof_of(const MatrixTypes& types, const MeasuredRoofs& measured) {
  const ComputeRoof& roof = compute_roof_of(types);
  return measured.*roof.value > 0 ? roof : kFmaRoof;
}

MemoryRoof::MemoryRoof() : buffer_(1 << 14, 1 << 14) {}  // 1 GiB, zero-filled (so its pages exist)

double MemoryRoof::measure(ThreadPool& pool, int reps) const {
  return measure_read_gbps(buffer_.data(), size_t(buffer_.size()) * sizeof(float), pool, reps);
}

double MemoryRoof::resident_mb() const { return double(buffer_.size()) * sizeof(float) / 1e6; }

MeasuredRoofs measure_roofs(ThreadPool& pool, const MemoryRoof& memory, bool bf16_dot, bool int8_dot) {
  MeasuredRoofs r;
  r.compute = measure_compute_roof_gflops(pool, 5);
  r.memory = memory.measure(pool, 5);
  if (bf16_dot) r.bf16_dot = measure_bf16_dot_roof_gflops(pool, 5);
  if (int8_dot) r.int8_dot = measure_int8_dot_roof_gops(pool, 5);
  return r;
}

void print_dot_roofs(const MeasuredRoofs& r) {
  if (r.bf16_dot > 0)
    std::printf(
        "bf16 rows: activations rounded to bf16 and dotted by %s (%s; FFN_ISA=%s keeps them f32), judged "
        "against its roof: %s GFLOP/s (the same chains, best of 5)\n\n",
        std::string(weight_type_kernel(WeightType::bf16, active_isa()).arithmetic).c_str(),
        std::string(isa_name(active_isa())).c_str(), std::string(isa_name(isa_extends(active_isa()))).c_str(),
        fixed(r.bf16_dot, 1).c_str());
  if (r.int8_dot > 0)
    std::printf(
        "integer rows (q8_0, q4_0, the K-quants, the i-quants: activations in q8_0 or q8_K, bytes dotted in "
        "integers), judged against the integer dot roof: %s Gop/s (%s, a byte product 2 operations; the same "
        "chains, best of 5)\n\n",
        fixed(r.int8_dot, 1).c_str(), int8_roof_loop_description().c_str());
}

}  // namespace ffn::cli
