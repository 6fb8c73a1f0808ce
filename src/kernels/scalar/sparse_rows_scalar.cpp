// The scalar loops of activation-sparse decode (sparse_rows.hpp) over one-lane "vectors":
// every product through std::fma, so rows_axpy's chain is the same bits as on every vector
// level (its contract); rows_dot's four chains are four interleaved scalar sums.
#include <cmath>
#include <cstring>

#include "core/quant.hpp"
#include "kernels/scalar/scalar_kernels.hpp"
#include "kernels/sparse_rows.hpp"

namespace ffn::kernels {
namespace {

struct ScalarLane {
  using Vec = float;
  static constexpr int64_t lanes = 1;
  static float broadcast(float v) { return v; }
  static float zero() { return 0.0f; }
  static float load(const float* p) { return *p; }
  static float load_tail(const float*, int64_t) { return 0.0f; }  // never called: no tail of one lane
  static float fmadd(float a, float b, float acc) { return std::fma(a, b, acc); }
  static float add(float a, float b) { return a + b; }
  static void store(float* p, float v) { *p = v; }
  static void store_tail(float*, float, int64_t) {}
  static float reduce(float v) { return v; }
};

template <float (*widen)(uint16_t)>
struct Load16 {
  using Elem = uint16_t;
  static float load(const uint16_t* p) { return widen(*p); }
  static float load_tail(const uint16_t*, int64_t) { return 0.0f; }
};

// q8_0's values, d·q one at a time.
struct Q8x1 {
  static float scale(const std::byte* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return f16_to_f32(d);
  }
  static float load(const int8_t* q, float d) { return float(*q) * d; }
};

using SparseRowsScalar = sparse_rows::Entries<ScalarLane, Load16<f16_to_f32>, Load16<bf16_to_f32>, Q8x1>;

}  // namespace

const RowsDot rows_dot_scalar = SparseRowsScalar::dot;
const RowsAxpy rows_axpy_scalar = SparseRowsScalar::axpy;

}  // namespace ffn::kernels
