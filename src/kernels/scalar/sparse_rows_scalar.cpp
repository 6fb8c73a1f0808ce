// The scalar loops of activation-sparse decode (sparse_rows.hpp) over one-lane "vectors":
// every product through std::fma, so rows_axpy's chain is the same bits as on every vector
// level (its contract); rows_dot's four chains are four interleaved scalar sums.
#include <cmath>
#include <cstring>

#include "core/quant.hpp"
#include "kernels/scalar/scalar_kernels.hpp"
#include "kernels/sparse_rows.hpp"
#include "kernels/sparse_rows_q8_0.hpp"

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

// q8_0 rows (rows_axpy): d, and each code q as it is.
struct Q8x1 {
  static float scale(const std::byte* block) {
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    return f16_to_f32(d);
  }
  static float load(const int8_t* q) { return float(*q); }
};

using SparseRowsScalar = sparse_rows::Entries<ScalarLane, Load16<f16_to_f32>, Load16<bf16_to_f32>, Q8x1>;

// The integer block dot of sparse_rows_q8_0.hpp, a block's sum at a time.
struct I8x1 {
  using Weights = const int8_t*;
  using Codes = const int8_t*;
  using Sums = int32_t;
  struct Acc {
    float lane[8];
  };
  static Weights weights(const int8_t* q) { return q; }
  static Codes codes(const int8_t* q) { return q; }
  static Sums zero() { return 0; }
  static Sums dot(Weights w, Codes x) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) s += int32_t(w[i]) * int32_t(x[i]);
    return s;
  }
  static Acc acc_zero() { return {}; }
  static void accumulate(const int32_t (&s)[8], const float* scale, Acc& acc) {
    for (int l = 0; l < 8; ++l) acc.lane[l] = std::fma(float(s[l]), scale[l], acc.lane[l]);
  }
  static void store(const Acc& acc, float* out) { std::memcpy(out, acc.lane, sizeof acc.lane); }
  static float half(const std::byte* p) { return Q8x1::scale(p); }
};

}  // namespace

const RowsDot rows_dot_scalar = SparseRowsScalar::dot;
const RowsAxpy rows_axpy_scalar = SparseRowsScalar::axpy;
const RowsDotQ8_0 rows_dot_q8_0_scalar = sparse_rows::rows_dot_q8_0<I8x1>;

}  // namespace ffn::kernels
