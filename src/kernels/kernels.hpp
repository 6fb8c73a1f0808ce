// Internal kernel interface: the contracts of the single-thread kernels, and the table of each
// ISA level (ffn/isa_list.hpp) that runtime dispatch picks from once. A level's folder
// (src/kernels/<level>/) holds its kernels, the header declaring them (<level>_kernels.hpp)
// and the file registering its table (register_<level>.cpp, kernels/register.hpp). A kernel's
// name carries its contract: <what>_<op>_<level>_<tile>, e.g. f32_gemm_nt_avx2_3x3 or
// q4_K_panel_gemm_avx512_vnni_2x64. Threaded drivers live in src/block/.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ffn/config.hpp"
#include "ffn/isa.hpp"
#include "ffn/weight_type.hpp"
#include "kernels/activation_kernels.hpp"
#include "kernels/activation_rows.hpp"
#include "kernels/named.hpp"
#include "kernels/rows_ahead.hpp"

namespace ffn::kernels {

// f32_gemm_nt_<isa>_<tile>: C[t][n] = Σ_k A[t][k] · B[n][k]   for t < T, n < N.
//   A: [T][K], row stride lda (activations);  B: [N][K], row stride ldb (nn.Linear
//   weight rows);  C: [T][N], row stride ldc. No alignment required; T, N, K ≥ 0; C must
//   not overlap A or B. K = 0 writes zeros.
//   Determinism: every C element is computed by the same sequence of operations whatever
//   T and N are and wherever the element falls in a tile (edge tiles use masked loads, not
//   a different loop), so splitting T or N across threads never changes a result bit.
//   Accuracy: each element is a sum of K products in f32 with error ≤ K·u·Σ|A·B|.
// f32_gemm_nt_packed_<isa>_<tile>: the same product and contract, computed as the panel
// kernel does (f32_panel_tiles.hpp): B's rows are transposed, 256 values of k at a time, into
// a 64-column panel on the stack and every element is one FMA chain over k in order — no lane
// reduction, and a panel in cache reused by every strip of tokens. Faster than f32_gemm_nt
// once there are enough tokens to pay for the transposition; the forward picks one by T
// alone, so the choice never depends on the thread count. (The scalar table uses
// f32_gemm_nt_scalar for both.)
using F32GemmNt = void (*)(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                           float* C, int64_t ldc);

// Weights packed at load for the forward (InferenceBlock, src/block/inference_pack.cpp):
// each panel holds the k-th values of kPanelWidth weight rows side by side in the layout of
// the matrix's type (f32 and f16: [K][64] values; bf16 below; qblock_panels.hpp,
// qsub_panels.hpp), 64-byte aligned, panels consecutive in memory.
inline constexpr int64_t kPanelWidth = 64;
// C[t][0 … kPanelWidth) = 0 for t < T (rows ldc apart): where a panel kernel's chains start
// in C, or C for no values (K = 0).
inline void zero_panel_rows(float* C, int64_t T, int64_t ldc) {
  for (int64_t t = 0; t < T; ++t) std::fill(C + t * ldc, C + t * ldc + kPanelWidth, 0.0f);
}
// The panel kernels take tokens in blocks of this many (each block's activations stay in
// cache while the panel's rows stream); the forward sweeps its panels block by block too.
inline constexpr int64_t kPanelTokenBlock = 256;

// bf16 panels: k in pairs, the layout of AVX512_BF16's vdpbf16ps and Arm's BFDOT, whose 32-bit
// lanes hold weights k and k + 1 of one row — element (k, j) at bf16_panel_index(k, j); K is padded to
// even with zero weights, so a bf16 panel over K holds bf16_panel_rows(K) · 64 values.
inline constexpr int64_t bf16_panel_index(int64_t k, int64_t j) { return (k >> 1) * 2 * kPanelWidth + 2 * j + (k & 1); }

// f32_panel_gemm_<isa>_<tile>: C[t][j] = Σ_k A[t][k] · P[k][j]   for t < T, j < 64.
//   A: [T][K], row stride lda (activations);  P: one panel, [K][64] contiguous, 64-byte
//   aligned;  C: [T][64], row stride ldc. T, K ≥ 0; C must not overlap A or P. K = 0
//   writes zeros. May prefetch (never read) the 512·64 floats after the panel.
//   Determinism: every element is one chain acc ← acc + A[t][k]·P[k][j] over k in order
//   from 0 (fused multiply-add in the vector kernels), whatever T is and wherever the
//   token falls in a tile (f32_panel_tiles.hpp): a token's result is the same alone or in
//   any batch, for any split of tokens or panels across threads.
//   Accuracy: error ≤ K·u·Σ|A·P|.
// (The forward's f32 panel kernel, and the backward's products of f32 operands laid out as
// panels, block/panels.hpp.)
using F32PanelGemm = void (*)(int64_t T, int64_t K, const float* A, int64_t lda, const float* P, float* C, int64_t ldc);

// <type>_panel_gemm_<isa>_<tile>: C[t][j] = Σ_k A[t][k] · W[j][k] for t < T, j < 64 — one
// panel P of 64 rows of K weights of the type, laid out as its family's panels are — on
// activations A in the format the kernel takes (PanelKernel::activations; activation_rows.hpp).
// C: [T][64], row stride ldc; T, K ≥ 0 (K a multiple of the type's block); C must not
// overlap A or P. The arithmetic of each family, the same whatever T is and wherever a token
// falls in a tile, so that a token's result is the same alone or in any batch:
//   f32:  f32_panel_gemm's contract;
//   f16, bf16 widened: the same chains with each weight widened exactly to f32 in registers
//         (only the panel's loads differ);
//   bf16 dotted: A rounded to bf16 once per forward (f32_to_bf16_rows); then one chain over
//         the pairs of k in order, each step one instruction adding a pair's two bf16
//         products (exact in f32) to the f32 accumulator. The error, against the exact sum
//         of the rounded operands Ã, is each instruction's own (u = 2⁻²⁴):
//     AVX512_BF16 (vdpbf16ps): the two products added to the accumulator one after the other,
//         each add rounded to nearest even: error ≤ K·u·Σ|Ã·P|. bf16 and f32 denormals are
//         read as zero and results flushed (DAZ/FTZ, as the instruction defines them);
//     FEAT_BF16 (BFDOT; the Arm ARM's BFDotAdd with FPCR.EBF = 0 — FEAT_EBF16's other mode,
//         which the library never sets): the pair's two products summed, then that sum added
//         to the accumulator, each sum rounded to odd (error < 1 ulp: relative < 2u), FPCR
//         ignored. ⌈K/2⌉ such roundings reach any product (the first pair's add into the
//         zero accumulator is exact), so error ≤ bf16_panel_rows(K)·u·Σ|Ã·P| — the same
//         order as vdpbf16ps's K·u. Denormal bf16 operands are read as zero, and a product
//         or sum below 2⁻¹²⁶ is flushed to zero (each flush errs by less than 2⁻¹²⁶), always:
//         the flushes are the instruction's, not FPCR.FZ's;
//   qblock: qblock_panels.hpp;  qsub: qsub_panels.hpp — exact integer sums a block, then one
//         f32 chain over the blocks, the same bits on every ISA.
using PanelGemm = void (*)(int64_t T, int64_t K, const ActivationRows& A, const std::byte* P, float* C, int64_t ldc);

// A weight type's panel kernel in one ISA's table: the forward's one indirect call a panel.
struct PanelKernel {
  std::string name;                          // its contract: "q4_K_panel_gemm_avx512_vnni_2x64"
  std::string_view arithmetic;               // how it multiplies, for people: "vdpbf16ps", "f32 FMA", …
  WeightType activations = WeightType::f32;  // the activation format it takes
  PanelGemm fn = nullptr;
  explicit operator bool() const { return fn != nullptr; }
};

// f32_to_bf16_rows_<isa>: out[t][k] = x[t][k] rounded to the nearest bf16 (ties to even;
// NaN stays NaN), t < T, k < K; out rows ldo values apart (ldo ≥ bf16_panel_rows(K)) with
// out[t][K] = 0 where K is odd, the padding a bf16 panel's last pair reads. f32 denormals:
//   AVX512_BF16 (vcvtneps2bf16): to zero, always (the instruction's DAZ);
//   FEAT_BF16 (BFCVTN): as FPCR says — with FPCR.FZ = 0, as Linux starts every process,
//     rounded like any other value (to a bf16 denormal, or up to the least normal), which is
//     ffn::f32_to_bf16; with FPCR.FZ = 1 (or FEAT_AFP's FPCR.AH = 1) to zero. Either way the
//     bf16 dot product then reads a denormal as zero. (The rounding mode is FPCR's too:
//     nearest even unless a caller changes it.)
using F32ToBf16Rows = void (*)(int64_t T, int64_t K, const float* x, int64_t ldx, uint16_t* out, int64_t ldo);

// f32_to_q8_rows_<isa>: x[0 … n) quantised to `format`, q8_0 (blocks of 32) or q8_K (256), as
// the integer kernels take their activations (activation_rows.hpp): codes[0 … n), scales[0 …
// n / block) — q8_0's binary16 scale widened to f32, q8_K's f32 d — and sums[0 … n / 16), each
// 16 codes' sum. n a multiple of the block. Every ISA writes the bits of quantize_row_q8_0 /
// quantize_row_q8_K (q8_0's codes rounded half away from zero, q8_K's half to even). Returns
// false, its outputs unspecified, where a value is not finite or a q8_0 block's scale does
// not fit binary16 — where those functions throw: the caller runs them then, so that the
// error names the value.
using F32ToQ8Rows = bool (*)(WeightType format, int64_t n, const float* x, int8_t* codes, float* scales, int16_t* sums);

// f32_fma_roof_<isa>: the compute roof's loop (f32_fma_roof.hpp); executes
// iterations · f32_roof_chains · f32_lanes · 2 FLOPs. bf16_dot_roof_<isa>: the bf16 compute
// roof's loop, as f32_fma_roof with the level's bf16 dot instruction (vdpbf16ps, BFDOT):
// iterations · f32_roof_chains · f32_lanes · 4. int8_dot_roof_<isa>: the integer compute
// roof's loop (int8_dot_roof.hpp), chains of the level's integer kernels' step (vpdpbusd,
// AVX2's vpmaddubsw + vpmaddwd + vpaddd, Arm's SDOT), 4 byte products a 32-bit lane:
// iterations · int8_roof_chains · int8_roof_lanes · 8 operations.
using F32FmaRoof = float (*)(int64_t iterations);

// stream_read_<isa>: the memory roof's loops (stream_read.hpp): reads the `floats` floats
// at p, any alignment, in read pattern `pattern` < kReadPatterns (4 streams × 4 lines a
// round, 2 × 1, 1 × 1; the scalar loop has one pattern and ignores it); returns a value
// depending on all of them.
inline constexpr int kReadPatterns = 3;
using StreamRead = float (*)(const float* p, int64_t floats, int pattern);

// f32_gemm_nn_<isa>_<tile>: C[t][n] = C₀ + Σ_k A[t][k] · B[k][n]   for t < T, n < N,
//   C₀ = C[t][n] if accumulate, else 0.
//   A: [T][K], row stride lda (upstream gradients dY, dU, dG);  B: [K][N], row stride ldb
//   (a weight read along its rows: W_down's columns for dH = dY·W_down, W_up for
//   dX = dU·W_up);  C: [T][N], row stride ldc. No alignment; T, N, K ≥ 0; C must not
//   overlap A or B. K = 0 writes zeros (or leaves C as it is, if accumulate).
//   Determinism: each element is one chain acc ← acc + A[t][k]·B[k][n] over k in order
//   (fused multiply-add in the vector kernels) starting at C₀, whatever T and N are and
//   wherever it falls in a tile. So splitting T or N across threads changes no bit, and
//   neither does splitting K into consecutive calls, all but the first with accumulate.
//   Accuracy: error ≤ K·u·(|C₀| + Σ|A·B|).
using F32GemmNn = void (*)(int64_t T, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                           float* C, int64_t ldc, bool accumulate);

// f32_gemm_tn_add_<isa>_<tile>: C[m][n] += S[m][n],  S[m][n] = Σ_k A[k][m] · B[k][n]
//   for m < M, n < N. K is the token count: dW_down += dYᵀ·H, dW_up += dUᵀ·X.
//   A: [K][M], row stride lda;  B: [K][N], row stride ldb;  C: [M][N], row stride ldc
//   (a gradient). No alignment; M, N, K ≥ 0; C must not overlap A or B.
//   Determinism: S is one chain from 0 over k in order (as in f32_gemm_nn), then added
//   to C with one rounding — so C = 0 gives exactly S, adding the same S twice gives
//   exactly 2S, and splitting M or N across threads changes no bit.
//   Accuracy: |S − exact| ≤ K·u·Σ|A·B|.
using F32GemmTnAdd = void (*)(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
                              float* C, int64_t ldc);

// rows_to_panel32_<isa>: panel[k·64 + j0 + r] = value k of row r, for r < rows ≤ 64 − j0
// and k < n: rows of 32-bit values — f32 weights, or bf16 weights read in pairs (value k
// holding weights 2k and 2k + 1, as a bf16 pair panel does: bf16_panel_index) — row r at
// src + r·ld_bytes, any alignment. The panel's other columns are untouched. Every ISA
// copies the same bits. (Packing at load.)
using RowsToPanel32 = void (*)(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint32_t* panel,
                               int64_t j0);
// rows_to_panel16_<isa>: the same for rows of 16-bit values (f16 weights into a [K][64]
// panel of them).
using RowsToPanel16 = void (*)(int64_t rows, int64_t n, const std::byte* src, int64_t ld_bytes, uint16_t* panel,
                               int64_t j0);

// rows_dot_<isa> (activation-sparse decode's up products): for t < T and i < n,
//   out[t·ldo + i] = Σ_k x[t·ldx + k] · W[rows[i]][k],  k < K,
// W's row r at W + r·row_bytes in `type`'s layout — f32, or f16 / bf16 widened exactly — no
// other type (q8_0 rows: rows_dot_q8_0). Each (t, i) is one fixed order of the K products for
// its ISA and K (one chain of the ISA's lanes: sparse_rows.hpp), so a row's result is the
// same bits for any list it is in, any T and any split of either; its rounding is within
// K·u of Σ|x·w| (u = 2⁻²⁴), as any order's. All three sparse-rows kernels take `ahead`
// (rows_ahead.hpp), the rows the caller reads next, which their last pass prefetches; no bit
// depends on it.
using RowsDot = void (*)(WeightType type, int64_t T, int64_t n, const int32_t* rows, int64_t K, const float* x,
                         int64_t ldx, const std::byte* W, int64_t row_bytes, float* out, int64_t ldo,
                         const RowsAhead& ahead);
// rows_dot_q8_0_<isa>: the same products for q8_0 rows (K a multiple of 32; each row in
// q8_0_split_rows.hpp's layout: its scales, then its codes) with the activations x in q8_0 (activation_rows.hpp;
// x.format == q8_0, T rows of K), by the qblock panels' arithmetic (qblock_panels.hpp): per (t, i) the chain acc ←
// fma(float(S_b), d_w·d_x, acc) over the blocks b in order from 0, S_b the exact integer block sum — the same bits on
// every ISA, for any list, T or split, and as the q8_0 panel kernels give.
using RowsDotQ8_0 = void (*)(int64_t T, int64_t n, const int32_t* rows, int64_t K, const ActivationRows& x,
                             const std::byte* W, int64_t row_bytes, float* out, int64_t ldo, const RowsAhead& ahead);
// rows_axpy_<isa> (its down product, down held transposed: a row per hidden channel): for
// t < T and c < N, y[t·ldy + c] ← fma(h[t·ldh + i], W[rows[i]][c], y[t·ldy + c]) for
// i = 0 … n − 1 in order, each step rounded once — the bits of that chain whatever the ISA,
// any column range a caller cuts N into, and whatever other tokens share the call. W points
// at the first column (the caller offsets it by c0's bytes). Types f32, f16 / bf16 widened
// exactly, and q8_0, whose step is fma(h·d, q, y) with h·d rounded once (whole rows of N
// values, N a multiple of 32, in q8_0_split_rows.hpp's layout: no cuts). A row with h = 0 adds an exact zero to a
// finite sum that started at +0 (never −0 then), so listing it changes no bit.
using RowsAxpy = void (*)(WeightType type, int64_t T, int64_t n, const int32_t* rows, const float* h, int64_t ldh,
                          int64_t N, const std::byte* W, int64_t row_bytes, float* y, int64_t ldy,
                          const RowsAhead& ahead);

// Every op of a kernel table, X(type, field), in the table's order: the one list that
// KernelTable's fields, Op, registered_kernels() and a wider table's inheritance are all
// made from, so that no entry can be left out of the enumeration the tests iterate. (The
// panel kernels, one a weight type, are KernelTable::panel_gemm.)
#define FFN_KERNEL_OPS(X)                                      \
  X(F32GemmNt, f32_gemm_nt)                                    \
  X(F32GemmNt, f32_gemm_nt_packed)                             \
  X(F32PanelGemm, f32_panel_gemm)                              \
  X(F32ToBf16Rows, f32_to_bf16_rows)                           \
  X(F32ToQ8Rows, f32_to_q8_rows)                               \
  X(F32GemmNn, f32_gemm_nn)                                    \
  X(F32GemmTnAdd, f32_gemm_tn_add)                             \
  X(RowsToPanel32, rows_to_panel32)                            \
  X(RowsToPanel16, rows_to_panel16)                            \
  X(F32ActivationRows, f32_activation_rows)                    \
  X(F32GatedActivationRows, f32_gated_activation_rows)         \
  X(F32ActivationBackward, f32_activation_backward)            \
  X(F32GatedActivationBackward, f32_gated_activation_backward) \
  X(F32Erfc, f32_erfc)                                         \
  X(F32FmaRoof, f32_fma_roof)                                  \
  X(F32FmaRoof, bf16_dot_roof)                                 \
  X(F32FmaRoof, int8_dot_roof)                                 \
  X(StreamRead, stream_read)                                   \
  X(RowsDot, rows_dot)                                         \
  X(RowsDotQ8_0, rows_dot_q8_0)                                \
  X(RowsAxpy, rows_axpy)

// The kernels of one ISA, each entry named by its function (kernels/register.hpp). Every
// table has every op except the bf16 dot product's (f32_to_bf16_rows, bf16_dot_roof), which
// only AVX512_BF16 and FEAT_BF16 have, and the integer roof loop (int8_dot_roof), which the
// levels without integer dot instructions (scalar, neon) lack, empty elsewhere, and a panel
// kernel for every weight type (none for the activation-only formats).
struct KernelTable {
  Isa isa = Isa::scalar;
  int64_t f32_lanes = 0;        // floats per vector register
  int64_t f32_roof_chains = 0;  // independent FMA chains of f32_fma_roof (and bf16_dot_roof)
  // int8_dot_roof's chains and their int32 lanes (plain AVX-512 keeps AVX2's integer
  // kernels, and so its ymm roof loop, under zmm f32 roofs).
  int64_t int8_roof_chains = 0, int8_roof_lanes = 0;
#define FFN_KERNEL_TABLE_FIELD(type, field) Named<type> field;
  FFN_KERNEL_OPS(FFN_KERNEL_TABLE_FIELD)
#undef FFN_KERNEL_TABLE_FIELD
  // Indexed by WeightType: the kernel multiplying that type's panels.
  std::array<PanelKernel, kWeightTypeCount> panel_gemm;
  const PanelKernel& panel(WeightType t) const { return panel_gemm[static_cast<size_t>(t)]; }
};

// The ops of a table, one per entry (its field's name); panel_gemm stands for the panel
// kernels of every weight type.
enum class Op {
#define FFN_KERNEL_OP_ENUMERATOR(type, field) field,
  FFN_KERNEL_OPS(FFN_KERNEL_OP_ENUMERATOR)
#undef FFN_KERNEL_OP_ENUMERATOR
      panel_gemm
};
inline constexpr Op kAllOps[] = {
#define FFN_KERNEL_OP_ELEMENT(type, field) Op::field,
    FFN_KERNEL_OPS(FFN_KERNEL_OP_ELEMENT)
#undef FFN_KERNEL_OP_ELEMENT
        Op::panel_gemm};
std::string_view op_name(Op op);

// The kernel for the forward's products x·Wᵀ at T tokens: f32_gemm_nt while the weights
// stream from memory (few tokens: lane-parallel dot products read each weight once, no
// packing), f32_gemm_nt_packed from kPackedMinTokens on (a measured crossover: below it
// the per-call transposition of the weights costs more than it saves). Chosen by T alone,
// so results never depend on the thread count; forward, forward_train and backward's
// recomputation all call it, so they agree bit for bit.
inline constexpr int64_t kPackedMinTokens = 64;
inline F32GemmNt forward_gemm(const KernelTable& k, int64_t T) {
  return T >= kPackedMinTokens ? k.f32_gemm_nt_packed.fn : k.f32_gemm_nt.fn;
}

// The kernels of one ISA (which must be supported: ffn::Error otherwise), and those of the
// active ISA. Each table is built once, on first use; no call asks the CPU again.
const KernelTable& kernel_table(Isa isa);
const KernelTable& active_kernels();

// The entries of one ISA's table (any ISA, supported or not: listing runs no kernel), in
// the table's order, empty entries left out, the panel kernels last in the weight types'
// order — what the tests iterate, so that every kernel registered on every ISA is checked
// against its reference.
struct RegisteredKernel {
  Op op;
  std::string_view name;              // the kernel's function, e.g. "f32_gemm_nt_avx2_3x3" in the avx512_vnni table
  Isa isa;                            // the table's ISA
  WeightType type = WeightType::f32;  // Op::panel_gemm: the weight type it multiplies
};
std::vector<RegisteredKernel> registered_kernels(Isa isa);

// Activations in f32 on the active ISA, by its table's entries (activation_kernels.hpp:
// libm in scalar, SLEEF's vector exp / tanh and erfc_f32.hpp's erfc in AVX2 and AVX-512,
// every formula in the same f32 order):
//   f32_activation_rows:       out[r][i] = act(in[r][i])           (2-matrix blocks)
//   f32_gated_activation_rows: out[r][i] = act(g[r][i]) · u[r][i]  (gated blocks)
// over rows × cols elements, each matrix's rows ld floats apart; out may be in (or u)
// exactly — same pointer and stride — and must not overlap them otherwise. A tile is one
// call: per-row calls of a few vectors each cost more than their arithmetic. The plain
// forms take one row of n, in place.
// NaN propagates; ±Inf give what IEEE arithmetic of the formula gives (as PyTorch).
// clamped_swish (gpt-oss) takes v(u) = clamp(u, −7, 7) + 1 in place of u in the gated form
// and below; its act is m·σ(1.702·m), m = min(g, 7).
void f32_activation_rows(Activation a, int64_t rows, int64_t cols, const float* in, int64_t ld_in, float* out,
                         int64_t ld_out);
void f32_gated_activation_rows(Activation a, int64_t rows, int64_t cols, const float* g, int64_t ld_g, const float* u,
                               int64_t ld_u, float* out, int64_t ld_out);
inline void f32_activation(Activation a, float* v, int64_t n) { f32_activation_rows(a, 1, n, v, n, v, n); }
inline void f32_gated_activation(Activation a, const float* g, float* u, int64_t n) {
  f32_gated_activation_rows(a, 1, n, g, n, u, n, u, n);
}

// Backward of the activations (activation_tiles.hpp), from the pre-activations kept or
// recomputed and the gradient dh of the hidden values; act' as PyTorch's autograd has it
// (relu' = 0 at 0). h is recomputed through f32_activation / f32_gated_activation, so it
// is bit-identical to the forward's.
//   f32_activation_backward:        h[i] = act(z[i]);         dz[i] = dh[i]·act'(z[i])
//   f32_gated_activation_backward:  h[i] = act(g[i])·u[i];    du[i] = dh[i]·act(g[i]);
//                                   dg[i] = (dh[i]·u[i])·act'(g[i])
//     clamped_swish: u becomes v(u) = clamp(u, −7, 7) + 1 in h and dg, du = (dh·act(g))·v'(u)
//     with v' = [−7 ≤ u ≤ 7], and act'(g) = 0 for g > 7 (both ends pass, as autograd's clamp)
// Each output array holds n floats and must not overlap an input.
void f32_activation_backward(Activation a, const float* z, const float* dh, float* h, float* dz, int64_t n);
void f32_gated_activation_backward(Activation a, const float* g, const float* u, const float* dh, float* h, float* du,
                                   float* dg, int64_t n);

}  // namespace ffn::kernels
