// The weight-type table (internal): for every WeightType its geometry, its reference
// conversions, how its rows are laid into the forward kernels' panels, and which panel
// kernel multiplies them on each ISA with which activations. Packing, the inference forward,
// loading and writing files, accounting, `ffn types`, the benches and the tests read it;
// nothing else names a type. Adding a type is one entry here plus its kernels
// (docs/architecture.md, checklist).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ffn/weight_type.hpp"
#include "kernels/kernels.hpp"

namespace ffn {

// One stage's activations in the format a panel kernel takes, T rows of K values from
// token 0 of the view: f32 rows (f32_stride apart); bf16 rows (bf16_stride apart, each of
// bf16_panel_rows(K) values); q8_0 blocks (kernels::Q8Rows of row length K); q8_K or q8_1
// blocks (kernels::Q8KRows of row length K, blocks of q8k_block). Only the format the
// kernel names is set.
struct ActivationRows {
  const float* f32 = nullptr;
  int64_t f32_stride = 0;
  const uint16_t* bf16 = nullptr;
  int64_t bf16_stride = 0;
  kernels::Q8Rows q8{nullptr, nullptr, nullptr};
  kernels::Q8KRows q8k{nullptr, nullptr, nullptr};
  int64_t q8k_block = kernels::kSuperBlockValues;  // values per q8k block: 256 (q8_K) or 32 (q8_1)

  // The same rows from token t0 on (K: the row length).
  ActivationRows from_token(int64_t t0, int64_t K) const {
    ActivationRows a = *this;
    if (f32) a.f32 += t0 * f32_stride;
    if (bf16) a.bf16 += t0 * bf16_stride;
    if (q8.qs) a.q8 = {q8.qs + t0 * K, q8.d + t0 * K / 32, q8.corr + t0 * K / 4};
    if (q8k.qs) a.q8k = {q8k.qs + t0 * K, q8k.d + t0 * K / q8k_block, q8k.bsums + t0 * K / 16};
    return a;
  }
};

// C[t][j] = Σ_k A[t][k] · P[k][j] for t < T, j < 64, over one panel P of the type (K
// weights a row); C rows ldc floats apart. The contract of the kernel it calls
// (kernels.hpp): every element one fixed chain, the same for any T and tile position.
using PanelProduct = void (*)(const kernels::KernelTable& k, int64_t T, int64_t K, const ActivationRows& a,
                              const std::byte* panel, float* C, int64_t ldc);

struct PanelKernel {
  const char* name;              // the kernel's name, which states its contract
  const char* arithmetic;        // how it multiplies, for people: "vdpbf16ps", "f32 FMA", ...
  ActivationFormat activations;  // what `product` reads of ActivationRows
  PanelProduct product;
};

struct WeightTypeTraits {
  WeightTypeInfo info;
  // Reference conversions of one row of n weights, n a multiple of the block, in the
  // stored layout (ggml's, byte for byte): exact widening, and the quantiser that rounds
  // as ggml's reference quantiser does (ffn::Error on a non-finite value or an
  // overflowing scale of a block type).
  void (*to_f32)(const std::byte* row, float* out, int64_t n);
  void (*from_f32)(const float* x, std::byte* row, int64_t n);
  // Bytes of one panel of 64 rows of K weights (kernels.hpp gives each layout).
  int64_t (*panel_bytes)(int64_t K);
  // Lays rows ≤ 64 − j0 rows of K weights, row r at src + r·row_bytes in the stored
  // layout, into columns j0 … of a panel (the kernels' layout; the same bits on every ISA).
  void (*rows_into_panel)(const kernels::KernelTable& k, const std::byte* src, int64_t row_bytes, int64_t rows,
                          int64_t K, std::byte* panel, int64_t j0);
  // The panel kernel of ISA table k for panels of this type.
  PanelKernel (*kernel)(const kernels::KernelTable& k);
  // Byte offsets of the binary16 scales in a block (d, and dmin where the type has one);
  // −1: none. Stored blocks are checked for finite scales at load (check_block_scales).
  int scale_fields[2] = {-1, -1};
  // The scale at scale_fields[0] is an e8m0 byte (MXFP4), NaN when 0xFF, not binary16.
  bool e8m0_scale = false;
};

// Throws ffn::Error naming `what`, the row and the block when a block of the stored rows
// (rows × cols weights of type t, row_bytes apart) has a non-finite binary16 scale (or an
// e8m0 scale 0xFF, the OCP format's NaN): a file
// whose scales are NaN or Inf would otherwise give NaN outputs without a word.
void check_block_scales(WeightType t, const std::byte* data, int64_t rows, int64_t cols, const std::string& what);

std::span<const WeightTypeTraits> weight_type_table();
const WeightTypeTraits& weight_type_traits(WeightType t);

}  // namespace ffn
