// The loops of activation-sparse decode (kernels.hpp: rows_dot, rows_dot_q8_0, rows_axpy)
// registered on every ISA, for each weight type they read (f32, f16 / bf16 widened exactly,
// q8_0):
//   rows_dot  (f32, f16, bf16) against a double-precision sum over a listed subset of rows, within the
//             summation bound K·u·Σ|x·w| (u = 2⁻²⁴: any order of K f32 products and sums
//             stays inside it, while one product dropped or doubled, or a wrong row, misses
//             by far more at these random values); and the same bits for a row alone, in
//             another list, or beside other tokens;
//   rows_dot_q8_0 bit for bit the scalar q8_0 panel kernel over the same rows packed into a
//             panel (one contract, qblock_panels.hpp): for T = 4 + 2 + 1 tokens, lists of
//             every remainder of a pass, row lengths of 1 to 90 blocks (every remainder of
//             a kernel's 16-block and 2-block steps), and at the integer sums' extremes
//             (codes −128 and 127 against ±127), where a pairwise int16 sum that saturated
//             would show;
//   rows_axpy bit for bit the chain its contract names — std::fma over the listed rows in
//             order (q8_0: of h·d and the code q), computed here in plain C++ — at column
//             counts around the vector widths and for any column range (element types; q8_0
//             rows are read whole); a row with h = 0 changes no bit;
//   q8_0 rows in the kernels' split layout (kernels/q8_0_split_rows.hpp), restated here:
//   a row's binary16 scales, then its codes.
//   and for all three, the rows a caller reads next (RowsAhead) are prefetched, never summed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <vector>

#include "core/quant.hpp"
#include "core/weight_type_table.hpp"
#include "isa_param.hpp"
#include "kernels/kernels.hpp"
#include "panel_support.hpp"
#include "random_data.hpp"

namespace ffn {
namespace {

using kernels::Op;

class SparseRows : public testing::TestWithParam<Isa> {};

const test::CheckedOps kDotOps = test::checks_ops({Op::rows_dot});
const test::CheckedOps kAxpyOps = test::checks_ops({Op::rows_axpy});
const test::CheckedOps kDotQ8Ops = test::checks_ops({Op::rows_dot_q8_0});

// A [rows][cols] matrix stored as `type` (f32, f16, bf16, or q8_0 with cols whole blocks, in
// the kernels' split layout), rows `row_bytes` apart with `pad` bytes of garbage after each
// row (the kernels must read only their K / N values), and the exact f32 values it holds;
// q8_0 also as ggml's blocks (`blocks`, rows packed), for the panel kernels.
struct StoredRows {
  WeightType type;
  int64_t rows, cols, row_bytes;
  std::vector<std::byte> bytes;
  std::vector<float> values;
  std::vector<std::byte> blocks;
};

// A q8_0 row of n values from ggml's blocks (d, then 32 codes, a block) into the split layout
// the sparse kernels read: the n / 32 scales first, then the n codes.
void split_q8_0_row(const std::byte* blocks, int64_t n, std::byte* row) {
  const int64_t nb = n / 32;
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(row + 2 * b, blocks + 34 * b, 2);
    std::memcpy(row + 2 * nb + 32 * b, blocks + 34 * b + 2, 32);
  }
}

StoredRows stored_rows(WeightType type, int64_t rows, int64_t cols, uint32_t seed) {
  const int64_t elem = type == WeightType::f32 ? 4 : 2, pad = 24;
  StoredRows s{type, rows, cols, weight_type_info(type).row_bytes(cols) + pad, {}, {}, {}};
  s.bytes.assign(size_t(rows * s.row_bytes), std::byte{0x7F});
  s.values.resize(size_t(rows * cols));
  const auto v = test::random_vector(size_t(rows * cols), seed);
  if (type == WeightType::q8_0) {  // ggml's quantiser, then the values its blocks hold
    const int64_t block_bytes = weight_type_info(type).row_bytes(cols);
    s.blocks.resize(size_t(rows * block_bytes));
    for (int64_t r = 0; r < rows; ++r) {
      std::byte* blocks = s.blocks.data() + r * block_bytes;
      weight_type_traits(type).from_f32(v.data() + r * cols, blocks, cols);
      weight_type_traits(type).to_f32(blocks, s.values.data() + r * cols, cols);
      split_q8_0_row(blocks, cols, s.bytes.data() + r * s.row_bytes);
    }
    return s;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      std::byte* dst = s.bytes.data() + r * s.row_bytes + c * elem;
      float x = v[size_t(r * cols + c)];
      if (type == WeightType::f16) {
        const uint16_t h = f32_to_f16(x);
        std::memcpy(dst, &h, 2);
        x = f16_to_f32(h);
      } else if (type == WeightType::bf16) {
        const uint16_t h = f32_to_bf16(x);
        std::memcpy(dst, &h, 2);
        x = bf16_to_f32(h);
      } else {
        std::memcpy(dst, &x, 4);
      }
      s.values[size_t(r * cols + c)] = x;
    }
  return s;
}

const WeightType kTypes[] = {WeightType::f32, WeightType::f16, WeightType::bf16, WeightType::q8_0};
const WeightType kElementTypes[] = {WeightType::f32, WeightType::f16, WeightType::bf16};

// The rows a caller says it reads next (kernels::RowsAhead), which a call's last pass
// prefetches: rows 2, 0, 1 of W, listed or not. No result may depend on them; the calls
// below that check results pass them, so a kernel that read them for its sums would fail.
const int32_t kRowsAhead[] = {2, 0, 1};
kernels::RowsAhead rows_ahead(const std::byte* W) { return {kRowsAhead, 3, W}; }

// The lengths a test runs for a type: q8_0's rows are whole blocks of 32 (1, 2, 3, 5, 15, 17,
// 32 and 90 of them: every remainder of the kernels' steps of 16 and 2 blocks).
const int64_t kQ8_0Lengths[] = {32, 64, 96, 160, 480, 544, 1024, 2880};
std::vector<int64_t> lengths(WeightType type, std::initializer_list<int64_t> element_lengths) {
  if (type == WeightType::q8_0) return {std::begin(kQ8_0Lengths), std::end(kQ8_0Lengths)};
  return element_lengths;
}

TEST_P(SparseRows, DotMatchesDoubleReferenceWithinSummationBound) {
  for (const auto& dot : test::registered_entries<kernels::RowsDot>(GetParam(), kDotOps))
    for (WeightType type : kElementTypes)
      for (int64_t K : {1, 3, 4, 7, 8, 15, 16, 17, 31, 63, 64, 65, 100, 257, 1000}) {
        const int64_t H = 23, T = 3;
        const StoredRows W = stored_rows(type, H, K, uint32_t(K));
        const auto x = test::random_vector(size_t(T * K), uint32_t(K + 1));
        const std::vector<int32_t> rows = {0, 5, 6, 7, 13, 22, 2};
        const int64_t n = int64_t(rows.size()), ldo = n + 2;
        std::vector<float> out(size_t(T * ldo), NAN);
        dot.fn(type, T, n, rows.data(), K, x.data(), K, W.bytes.data(), W.row_bytes, out.data(), ldo,
               rows_ahead(W.bytes.data()));
        for (int64_t t = 0; t < T; ++t)
          for (int64_t i = 0; i < n; ++i) {
            double exact = 0, magnitude = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double p = double(x[size_t(t * K + k)]) * W.values[size_t(rows[size_t(i)] * K + k)];
              exact += p;
              magnitude += std::abs(p);
            }
            const double bound = double(K) * std::ldexp(1.0, -24) * magnitude * 1.01;
            EXPECT_NEAR(out[size_t(t * ldo + i)], exact, bound)
                << dot.name << " " << weight_type_name(type) << " K=" << K << " t=" << t << " row " << rows[size_t(i)];
          }
        for (int64_t t = 0; t < T; ++t)  // the padding of out is untouched
          for (int64_t i = n; i < ldo; ++i) ASSERT_TRUE(std::isnan(out[size_t(t * ldo + i)])) << dot.name;
      }
}

TEST_P(SparseRows, DotOfARowIsTheSameAloneInAnyListOrBatch) {
  for (const auto& dot : test::registered_entries<kernels::RowsDot>(GetParam(), kDotOps))
    for (WeightType type : kElementTypes) {
      const int64_t H = 9, K = 203, T = 7;  // tokens 4 + 2 + 1 at once
      const StoredRows W = stored_rows(type, H, K, 7);
      const auto x = test::random_vector(size_t(T * K), 8);
      const std::vector<int32_t> all = {8, 1, 4, 0, 3};
      std::vector<float> batch(size_t(T * all.size()));
      dot.fn(type, T, int64_t(all.size()), all.data(), K, x.data(), K, W.bytes.data(), W.row_bytes, batch.data(),
             int64_t(all.size()), rows_ahead(W.bytes.data()));
      for (int64_t t = 0; t < T; ++t)
        for (size_t i = 0; i < all.size(); ++i) {
          float alone = NAN;
          dot.fn(type, 1, 1, &all[i], K, x.data() + t * K, K, W.bytes.data(), W.row_bytes, &alone, 1, {});
          ASSERT_EQ(alone, batch[size_t(t) * all.size() + i]) << dot.name << " " << weight_type_name(type);
        }
    }
}

// out[t·ldo + i] of the scalar q8_0 panel kernel over `rows` of W (ggml's blocks, rows
// packed), packed into one panel in list order (at most 64 rows).
std::vector<float> panel_product(const std::byte* W, const std::vector<int32_t>& rows, int64_t K,
                                 const kernels::ActivationRows& x, int64_t T, int64_t ldo) {
  const int64_t n = int64_t(rows.size()), packed_bytes = weight_type_info(WeightType::q8_0).row_bytes(K);
  std::vector<std::byte> listed(size_t(n * packed_bytes));
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(listed.data() + i * packed_bytes, W + int64_t(rows[size_t(i)]) * packed_bytes, size_t(packed_bytes));
  const test::Panel panel = test::pack(WeightType::q8_0, listed.data(), packed_bytes, n, K);
  std::vector<float> tile(size_t(T * 64)), out(size_t(T * ldo), NAN);
  kernels::kernel_table(Isa::scalar).panel(WeightType::q8_0).fn(T, K, x, panel.data(), tile.data(), 64);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < n; ++i) out[size_t(t * ldo + i)] = tile[size_t(t * 64 + i)];
  return out;
}

TEST_P(SparseRows, DotQ8_0IsTheQ8_0PanelProductBitForBit) {
  for (const auto& dot : test::registered_entries<kernels::RowsDotQ8_0>(GetParam(), kDotQ8Ops))
    for (int64_t K : kQ8_0Lengths) {
      const int64_t H = 31, T = 7;  // tokens 4 + 2 + 1 at once
      const StoredRows W = stored_rows(WeightType::q8_0, H, K, uint32_t(K + 5));
      const test::Activations x =
          test::quantise(WeightType::q8_0, T, K, test::random_vector(size_t(T * K), uint32_t(K + 6)));
      // 1 … 17 rows: whole passes of 8, 4 and 2 rows (T = 1, 2, 4) and the tail passes of 4, 2
      // and 1 row after them (15 = 8 + 4 + 2 + 1), one row twice.
      for (size_t n : {size_t(1), size_t(3), size_t(7), size_t(8), size_t(9), size_t(15), size_t(17)}) {
        std::vector<int32_t> rows;
        for (size_t i = 0; i < n; ++i) rows.push_back(int32_t((i * 7 + 3) % size_t(H)));
        if (n > 3) rows[n - 1] = rows[0];
        const int64_t ldo = int64_t(n) + 2;
        const auto expected = panel_product(W.blocks.data(), rows, K, x.rows, T, ldo);
        std::vector<float> out(size_t(T * ldo), NAN);
        dot.fn(T, int64_t(n), rows.data(), K, x.rows, W.bytes.data(), W.row_bytes, out.data(), ldo,
               rows_ahead(W.bytes.data()));
        for (size_t e = 0; e < out.size(); ++e) {
          if (std::isnan(expected[e])) {  // the padding of out is untouched
            ASSERT_TRUE(std::isnan(out[e])) << dot.name << " K=" << K << " n=" << n << " element " << e;
          } else {
            ASSERT_EQ(out[e], expected[e]) << dot.name << " K=" << K << " n=" << n << " element " << e;
          }
        }
      }
    }
}

// Codes −128 and 127 (all one or alternating) against activations all +1, all −1 or
// alternating (codes ±127): each block's integer sum at its extremes, ±32·128·127.
TEST_P(SparseRows, DotQ8_0AtExtremeCodesIsThePanelProduct) {
  const int64_t K = 128, H = 8, T = 3, row_bytes = K / 32 * 34;
  std::vector<std::byte> blocks(size_t(H * row_bytes)), W(blocks.size());
  for (int64_t r = 0; r < H; ++r)
    for (int64_t b = 0; b < K / 32; ++b) {
      std::byte* block = blocks.data() + r * row_bytes + b * 34;
      const uint16_t d = 0x3C00;  // 1.0
      std::memcpy(block, &d, 2);
      for (int64_t i = 0; i < 32; ++i) {
        const bool high = r % 4 == 0 || (r % 4 >= 2 && (i + r / 4) % 2 == 0);
        block[2 + i] = std::byte(high ? 0x7F : 0x80);
      }
    }
  std::vector<float> xs(size_t(T * K));
  for (int64_t i = 0; i < T * K; ++i) xs[size_t(i)] = i / K == 0 ? 1.0f : i / K == 1 ? -1.0f : (i % 2 ? -1.0f : 1.0f);
  const test::Activations x = test::quantise(WeightType::q8_0, T, K, xs);
  for (int64_t r = 0; r < H; ++r) split_q8_0_row(blocks.data() + r * row_bytes, K, W.data() + r * row_bytes);
  const std::vector<int32_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  const auto expected = panel_product(blocks.data(), rows, K, x.rows, T, H);
  for (const auto& dot : test::registered_entries<kernels::RowsDotQ8_0>(GetParam(), kDotQ8Ops)) {
    std::vector<float> out(size_t(T * H), NAN);
    dot.fn(T, H, rows.data(), K, x.rows, W.data(), row_bytes, out.data(), H, {});
    for (size_t e = 0; e < out.size(); ++e) ASSERT_EQ(out[e], expected[e]) << dot.name << " element " << e;
  }
}

// y after the contract's chain, in plain C++: fma(h, w, y), for q8_0 fma(h·d, q, y) with d
// and q read from the row's bytes (its scales, then its codes).
std::vector<float> axpy_chain(const StoredRows& W, const std::vector<int32_t>& rows, const std::vector<float>& h,
                              int64_t T, std::vector<float> y, int64_t N) {
  for (int64_t t = 0; t < T; ++t)
    for (size_t i = 0; i < rows.size(); ++i)
      for (int64_t c = 0; c < N; ++c) {
        float& acc = y[size_t(t * N + c)];
        const float hi = h[size_t(t) * rows.size() + i];
        if (W.type == WeightType::q8_0) {
          const std::byte* row = W.bytes.data() + rows[i] * W.row_bytes;
          uint16_t d;
          std::memcpy(&d, row + 2 * (c / 32), 2);
          const auto q = static_cast<int8_t>(row[2 * (N / 32) + c]);
          acc = std::fma(hi * f16_to_f32(d), float(q), acc);
        } else {
          acc = std::fma(hi, W.values[size_t(rows[i] * W.cols + c)], acc);
        }
      }
  return y;
}

TEST_P(SparseRows, AxpyIsTheContractsChainBitForBit) {
  for (const auto& axpy : test::registered_entries<kernels::RowsAxpy>(GetParam(), kAxpyOps))
    for (WeightType type : kTypes)
      for (int64_t N : lengths(type, {1, 3, 4, 5, 8, 9, 15, 16, 17, 33, 64, 100, 130})) {
        const int64_t H = 31, T = 7;  // tokens 4 + 2 + 1 at once
        const StoredRows W = stored_rows(type, H, N, uint32_t(N + 100));
        // 1 … 15 rows: passes of 8 and the tail passes of 4, 2 and 1 row after them.
        for (size_t n : {size_t(1), size_t(3), size_t(4), size_t(5), size_t(8), size_t(11), size_t(15)}) {
          std::vector<int32_t> rows;
          for (size_t i = 0; i < n; ++i) rows.push_back(int32_t((i * 7 + 3) % size_t(H)));
          auto h = test::random_vector(size_t(T) * n, uint32_t(N + n));
          h[0] = 0.0f;  // a listed row whose value is zero
          const auto y0 = test::random_vector(size_t(T * N), uint32_t(N + n + 1));
          const auto expected = axpy_chain(W, rows, h, T, y0, N);
          auto y = y0;
          axpy.fn(type, T, int64_t(n), rows.data(), h.data(), int64_t(n), N, W.bytes.data(), W.row_bytes, y.data(), N,
                  rows_ahead(W.bytes.data()));
          for (size_t e = 0; e < y.size(); ++e)
            ASSERT_EQ(y[e], expected[e]) << axpy.name << " " << weight_type_name(type) << " N=" << N << " n=" << n;
          // Any column range gives the same bits: columns [0, c) then [c, N) (element types:
          // q8_0 rows are read whole, their scales before their codes).
          if (type == WeightType::q8_0) continue;
          const int64_t block = weight_type_info(type).block_elements, cut = N / 3 / block * block;
          const int64_t cut_bytes = weight_type_info(type).row_bytes(cut);
          auto pieces = y0;
          axpy.fn(type, T, int64_t(n), rows.data(), h.data(), int64_t(n), cut, W.bytes.data(), W.row_bytes,
                  pieces.data(), N, {});
          axpy.fn(type, T, int64_t(n), rows.data(), h.data(), int64_t(n), N - cut, W.bytes.data() + cut_bytes,
                  W.row_bytes, pieces.data() + cut, N, {});
          for (size_t e = 0; e < y.size(); ++e) ASSERT_EQ(pieces[e], expected[e]) << axpy.name << " split at " << cut;
        }
      }
}

TEST_P(SparseRows, AxpyRowWithZeroValueChangesNoBit) {
  for (const auto& axpy : test::registered_entries<kernels::RowsAxpy>(GetParam(), kAxpyOps))
    for (WeightType type : kTypes) {
      const int64_t H = 12, N = type == WeightType::q8_0 ? 64 : 37;
      const StoredRows W = stored_rows(type, H, N, 5);
      const std::vector<int32_t> own = {1, 4, 9}, listed = {1, 2, 4, 7, 9};
      const std::vector<float> h_own = {0.5f, -1.25f, 2.0f}, h_listed = {0.5f, 0.0f, -1.25f, 0.0f, 2.0f};
      std::vector<float> a(size_t(N), 0.0f), b(size_t(N), 0.0f);
      axpy.fn(type, 1, 3, own.data(), h_own.data(), 3, N, W.bytes.data(), W.row_bytes, a.data(), N, {});
      axpy.fn(type, 1, 5, listed.data(), h_listed.data(), 5, N, W.bytes.data(), W.row_bytes, b.data(), N, {});
      for (int64_t c = 0; c < N; ++c) {
        uint32_t ba, bb;
        std::memcpy(&ba, &a[size_t(c)], 4);
        std::memcpy(&bb, &b[size_t(c)], 4);
        ASSERT_EQ(ba, bb) << axpy.name << " column " << c;
      }
    }
}

FFN_INSTANTIATE_FOR_EVERY_ISA(SparseRows);

}  // namespace
}  // namespace ffn
