// ggml's K-quant super-blocks Q2_K … Q6_K, IQ4_XS and Q8_K (layouts in ggml_blocks.hpp):
// dequantisers and reference quantisers that reproduce ggml-quants.c's results bit for bit.
//
// How that is kept: every f32 expression is evaluated as ggml writes it — the same operands,
// the same left-to-right association, int → float conversions at the same points — and the
// project compiles with -ffp-contract=off, so no multiply-add is fused. Rounding to an integer
// is ggml's nearest_int (ggml_blocks_shared.hpp) where ggml uses it and C's truncation where ggml casts.
// binary16 conversions are ffn's f32_to_f16 (round to nearest even, as ggml's
// GGML_FP32_TO_FP16) and the exact f16_to_f32.
//
// Where this differs from ggml on purpose: a non-finite x, a scale or offset that does not fit
// binary16, or (super-block and IQ4 types) |x| above kMaxAbs is an ffn::Error — ggml stores
// ±Inf / NaN scales there, or asserts in nearest_int.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "core/codecs.hpp"
#include "core/ggml_blocks.hpp"
#include "core/ggml_blocks_shared.hpp"

namespace ffn {
namespace {

using namespace ggml_detail;

// ---- the K-quants' per-sub-block searches ----

// ggml's make_qkx2_quants: an asymmetric nmax-level grid (value = scale·l − the_min, l in
// 0 … nmax, the_min ≥ 0) for n values with weights w. Starts from the grid spanning
// [min(x, 0), max x], then tries nstep+1 widened/narrowed grids (nmax + rmin + rdelta·is
// steps over the range), each refitted by weighted least squares, keeping the one of least
// weighted error (|diff| if use_mad, diff² otherwise). Returns scale; codes in L.
float make_qkx2_quants(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  auto error_of = [&](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * L[i] + min - x[i];
    best_error += w[i] * error_of(diff);
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {  // the grid must reach down to min(x, 0): refit the scale alone
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float cur_error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * Laux[i] + this_min - x[i];
      cur_error += w[i] * error_of(diff);
    }
    if (cur_error < best_error) {
      for (int i = 0; i < n; ++i) L[i] = Laux[i];
      best_error = cur_error;
      scale = this_scale;
      min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

// ggml's make_qx_quants with rmse_type 1 and no importance weights (what Q6_K's reference
// quantiser uses): a symmetric grid value = scale·(L − nmax), L in 0 … 2·nmax − 1, for n
// values; the value of largest magnitude maps to −nmax at first, then 18 neighbouring grids
// (nmax ± 0.1·is steps) are refitted by least squares weighted by x², the best kept.
float make_qx_quants_rmse1(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(x, n, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  auto code = [&](float iscale, int i) { return clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = code(iscale, i);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = code(iscale, i);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + code(iscale, i));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// ggml's make_q3_quants with do_rmse (Q3_K's reference): a symmetric grid value =
// scale·(L − nmax), L in 0 … 2·nmax − 1, starting from max ↦ −nmax, then up to 5 sweeps that
// move single codes where that raises the x²-weighted fit (sumlx²/suml2). Returns the
// least-squares scale of the final codes.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(x, n, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * L[i] * L[i];
      const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == L[i]) continue;
      slx += w * x[i] * new_l;
      sl2 += w * new_l * new_l;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++n_changed;
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Codes of 2 bits for 256 values into 64 bytes (Q2_K / Q3_K's qs): in each half of 128
// values, byte l holds codes l, l + 32, l + 64, l + 96 at bits 0, 2, 4, 6.
template <class Code>
void pack_2bit(const Code* L, uint8_t* qs) {
  for (int h = 0; h < 256; h += 128)
    for (int l = 0; l < 32; ++l)
      qs[h / 4 + l] =
          static_cast<uint8_t>(L[h + l] | (L[h + l + 32] << 2) | (L[h + l + 64] << 4) | (L[h + l + 96] << 6));
}

// Q4_K / Q5_K's 12 scale bytes from 8 six-bit scales and mins (the inverse of k4_scale_min).
void pack_k4_scales(const uint8_t* ls, const uint8_t* lm, uint8_t* scales) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// Q3_K's 6-bit scale code (0 … 63, offset 32) of sub-block j < 16 from its 12 packed bytes:
// low 4 bits in the low (j < 8) or high (j ≥ 8) nibble of byte j mod 8, high 2 bits at bit
// 2·(j / 4) of byte 8 + j mod 4.
int q3_scale_code(const uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  return low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

// Q4_K and Q5_K share everything but the code width (nmax 15 or 31) and make_qkx2_quants's
// search (rmin, nstep). Fills the block's d, dmin and scales and the codes L[256].
template <class Block>
void quantize_k4_style(const float* x, Block& y, uint8_t* L, int nmax, float rmin, int nstep, int64_t b,
                       const char* fn) {
  float mins[8], scales[8], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;  // the min is subtracted, so scales come out ≥ 0
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int's result in a uint8_t before clamping: keep that wrap.
    const uint8_t s = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    const uint8_t m = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    ls[j] = s < 63 ? s : 63;
    lm[j] = m < 63 ? m : 63;
  }
  std::memset(y.scales, 0, sizeof y.scales);
  pack_k4_scales(ls, lm, y.scales);
  y.d = scale_f16(max_scale / 63.f, x, kSuperBlock, b, fn);
  y.dmin = scale_f16(max_min / 63.f, x, kSuperBlock, b, fn);
  // Requantise every value against the stored (binary16) scales; a sub-block whose scale
  // rounded to 0 keeps its codes from the search.
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    k4_scale_min(j, y.scales, sc, m);
    const float d = f16_to_f32(y.d) * sc;
    if (!d) continue;
    const float dm = f16_to_f32(y.dmin) * m;
    for (int ii = 0; ii < 32; ++ii)
      L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
  }
}

}  // namespace

using namespace ggml_detail;

// ---------------------------------------------------------------- dequantisation
void dequantize_row_q2_K(const BlockQ2_K* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kSuperBlock, "dequantize_row_q2_K");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int s = 0; s < 16; ++s, y += 16) {
      const uint8_t sc = x[b].scales[s];
      const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
      const uint8_t* q = x[b].qs + 32 * (s / 8) + 16 * (s % 2);
      const int shift = 2 * ((s % 8) / 2);
      for (int l = 0; l < 16; ++l) y[l] = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
    }
  }
}

// Q3_K: as Q2_K, the high bit of value v = 16s + l at bit v / 32 of hmask[v mod 32].
void dequantize_row_q3_K(const BlockQ3_K* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kSuperBlock, "dequantize_row_q3_K");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d_all = f16_to_f32(x[b].d);
    for (int s = 0; s < 16; ++s, y += 16) {
      const float dl = d_all * static_cast<float>(q3_scale_code(x[b].scales, s) - 32);
      const uint8_t* q = x[b].qs + 32 * (s / 8) + 16 * (s % 2);
      const int shift = 2 * ((s % 8) / 2);
      for (int l = 0; l < 16; ++l) {
        const int v = 16 * s + l;
        const int high = (x[b].hmask[v % 32] >> (v / 32)) & 1;
        y[l] = dl * static_cast<float>(((q[l] >> shift) & 3) - (high ? 0 : 4));
      }
    }
  }
}

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kSuperBlock, "dequantize_row_q4_K");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int s = 0; s < 8; ++s, y += 32) {
      uint8_t sc, m;
      k4_scale_min(s, x[b].scales, sc, m);
      const float ds = d * sc, ms = dmin * m;
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) y[l] = ds * static_cast<float>((q[l] >> shift) & 0xF) - ms;
    }
  }
}

void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kSuperBlock, "dequantize_row_q5_K");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int s = 0; s < 8; ++s, y += 32) {
      uint8_t sc, m;
      k4_scale_min(s, x[b].scales, sc, m);
      const float ds = d * sc, ms = dmin * m;
      const uint8_t* q = x[b].qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        const int code = ((q[l] >> shift) & 0xF) + (((x[b].qh[l] >> s) & 1) ? 16 : 0);
        y[l] = ds * static_cast<float>(code) - ms;
      }
    }
  }
}

// Q6_K: in each half h of 128 values, value 128h + 32k + l (k < 4, l < 32) has its low 4 bits
// in the low (k < 2) or high (k ≥ 2) nibble of ql[64h + 32·(k mod 2) + l] and its high 2 bits at bit 2k of qh[32h + l];
// its scale is that of sub-block 8h + 2k + l / 16. (d·scale)·(q − 32), associated as ggml writes it.
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kSuperBlock, "dequantize_row_q6_K");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int h = 0; h < 2; ++h, y += 128) {
      const uint8_t* ql = x[b].ql + 64 * h;
      const uint8_t* qh = x[b].qh + 32 * h;
      const int8_t* sc = x[b].scales + 8 * h;
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) {
          const int low = (ql[32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
          const int q = (low | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
          y[32 * k + l] = d * static_cast<float>(sc[2 * k + l / 16]) * static_cast<float>(q);
        }
    }
  }
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kSuperBlock, "dequantize_row_iq4_xs");
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int s = 0; s < 8; ++s, y += 32) {
      const int ls = ((x[b].scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | (((x[b].scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* qs = x[b].qs + 16 * s;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4Values[qs[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
      }
    }
  }
}

// ---------------------------------------------------------------- quantisation
void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t n) {
  const char* fn = "quantize_row_iq4_xs";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    require_quantisable(v, kSuperBlock, b, fn);
    uint8_t L[256];
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int s = 0; s < 8; ++s) {
      scales[s] = iq4_sub_block_scale(v + 32 * s, L + 32 * s, 7);
      if (std::fabs(scales[s]) > amax_scale) {
        amax_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    const float d = -max_scale / 32;  // −0 when every sub-block is ~zero, as in ggml
    y[b].d = scale_f16(d, v, kSuperBlock, b, fn);
    const float id = d ? 1 / d : 0.f;
    y[b].scales_h = 0;
    std::memset(y[b].scales_l, 0, sizeof y[b].scales_l);
    for (int s = 0; s < 8; ++s) {
      const int l = clamp_int(nearest_int(id * scales[s]), -32, 31);
      const float dl = d * l;
      const float idl = dl ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j)
        L[32 * s + j] = static_cast<uint8_t>(nearest_codebook_index(16, kIq4Values, idl * v[32 * s + j]));
      const int code = l + 32;
      y[b].scales_l[s / 2] |= static_cast<uint8_t>((code & 0xF) << (4 * (s % 2)));
      y[b].scales_h |= static_cast<uint16_t>((code >> 4) << (2 * s));
    }
    for (int s = 0; s < 8; ++s) pack_nibbles_32(L + 32 * s, y[b].qs + 16 * s);
  }
}

// ggml's quantize_row_q2_K_ref: per 16-value sub-block a 4-level asymmetric grid
// (make_qkx2_quants, weights |x|, absolute-error criterion), its scale and min quantised to
// 4 bits against the super-block's d = max scale / 15 and dmin = max min / 15, then every value
// re-coded against the stored scales.
void quantize_row_q2_K(const float* x, BlockQ2_K* y, int64_t n) {
  const char* fn = "quantize_row_q2_K";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    require_quantisable(v, kSuperBlock, b, fn);
    uint8_t L[256], Laux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(v[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, v + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float q4scale = 15.f;
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[b].d = scale_f16(max_scale / q4scale, v, kSuperBlock, b, fn);
    } else {
      std::memset(y[b].scales, 0, sizeof y[b].scales);
      y[b].d = f32_to_f16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < 16; ++j) y[b].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
      y[b].dmin = scale_f16(max_min / q4scale, v, kSuperBlock, b, fn);
    } else {
      y[b].dmin = f32_to_f16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(y[b].d) * (y[b].scales[j] & 0xF);
      if (!d) continue;  // keeps the search's codes
      const float dm = f16_to_f32(y[b].dmin) * (y[b].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((v[16 * j + ii] + dm) / d), 0, 3));
    }
    pack_2bit(L, y[b].qs);
  }
}

// ggml's quantize_row_q3_K_ref: per 16-value sub-block a symmetric 8-level grid
// (make_q3_quants), the signed scales coded in 6 bits against d = max_scale/−32 (max_scale:
// the scale of largest magnitude, sign kept), every value re-coded against the stored scales;
// the codes' bit 2 goes to hmask, bits 0–1 to qs.
void quantize_row_q3_K(const float* x, BlockQ3_K* y, int64_t n) {
  const char* fn = "quantize_row_q3_K";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    require_quantisable(v, kSuperBlock, b, fn);
    int8_t L[256];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, v + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(y[b].scales, 0, sizeof y[b].scales);
    if (max_scale) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // ggml narrows nearest_int's result to int8 before clamping: keep that.
        int l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        l = clamp_int(l, -32, 31) + 32;
        if (j < 8)
          y[b].scales[j] = static_cast<uint8_t>(l & 0xF);
        else
          y[b].scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        y[b].scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      y[b].d = scale_f16(1 / iscale, v, kSuperBlock, b, fn);
    } else {
      y[b].d = f32_to_f16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(y[b].d) * (q3_scale_code(y[b].scales, j) - 32);
      if (!d) continue;  // keeps the search's codes
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(v[16 * j + ii] / d), -4, 3) + 4);
    }
    std::memset(y[b].hmask, 0, sizeof y[b].hmask);
    for (int j = 0; j < 256; ++j)
      if (L[j] > 3) {
        y[b].hmask[j % 32] |= static_cast<uint8_t>(1u << (j / 32));
        L[j] = static_cast<int8_t>(L[j] - 4);
      }
    pack_2bit(L, y[b].qs);
  }
}

// ggml's quantize_row_q4_K_ref: per 32-value sub-block a 16-level asymmetric grid
// (make_qkx2_quants: weights rms(x) + |x|, squared error, rmin −1, 20 steps of 0.1); scales
// and mins in 6 bits against d = max scale / 63, dmin = max min / 63.
void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n) {
  const char* fn = "quantize_row_q4_K";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    require_quantisable(v, kSuperBlock, b, fn);
    uint8_t L[256];
    quantize_k4_style(v, y[b], L, 15, -1.f, 20, b, fn);
    // Sub-blocks 2i and 2i + 1 share qs[32i … 32i + 31]: low and high nibble.
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * i + l] = static_cast<uint8_t>(L[64 * i + l] | (L[64 * i + 32 + l] << 4));
  }
}

// ggml's quantize_row_q5_K_ref: as Q4_K with 32 levels (rmin −0.5, 15 steps); bit 4 of the
// code of value l of sub-block s goes to bit s of qh[l].
void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n) {
  const char* fn = "quantize_row_q5_K";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    require_quantisable(v, kSuperBlock, b, fn);
    uint8_t L[256];
    quantize_k4_style(v, y[b], L, 31, -0.5f, 15, b, fn);
    std::memset(y[b].qh, 0, sizeof y[b].qh);
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * i + l], hi = L[64 * i + 32 + l];
        y[b].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * i)) | ((hi >> 4) << (2 * i + 1)));
        y[b].qs[32 * i + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      }
  }
}

// ggml's quantize_row_q6_K_ref: per 16-value sub-block a symmetric 64-level grid
// (make_qx_quants, rmse_type 1), the signed scales in int8 against d = max_scale/−128, every
// value re-coded against the stored scales. A super-block whose scales are all ~0 is all zero
// bytes.
void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n) {
  const char* fn = "quantize_row_q6_K";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    require_quantisable(v, kSuperBlock, b, fn);
    int8_t L[256];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < 16; ++s) {
      scales[s] = make_qx_quants_rmse1(16, 32, v + 16 * s, L + 16 * s);
      if (std::fabs(scales[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[b].d = scale_f16(1 / iscale, v, kSuperBlock, b, fn);
    for (int s = 0; s < 16; ++s) {
      const int q = nearest_int(iscale * scales[s]);
      y[b].scales[s] = static_cast<int8_t>(q < 127 ? q : 127);
    }
    for (int s = 0; s < 16; ++s) {
      const float d = f16_to_f32(y[b].d) * y[b].scales[s];
      if (!d) continue;  // keeps the search's codes
      for (int ii = 0; ii < 16; ++ii)
        L[16 * s + ii] = static_cast<int8_t>(clamp_int(nearest_int(v[16 * s + ii] / d), -32, 31) + 32);
    }
    // The inverse of dequantize_row_q6_K's layout.
    for (int h = 0; h < 2; ++h) {
      const int8_t* Lh = L + 128 * h;
      uint8_t* ql = y[b].ql + 64 * h;
      uint8_t* qh = y[b].qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                     ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

// ggml's quantize_row_q8_K_ref: qs = round(−127/max · x) (max: the value of largest
// magnitude, sign kept, maps to −127; the codes lie in −127 … 127), d = 1/iscale in f32.
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
  const char* fn = "quantize_row_q8_K";
  const int64_t blocks = block_count(n, kSuperBlock, fn);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* v = x + b * kSuperBlock;
    require_finite(v, kSuperBlock, b * kSuperBlock, fn);
    float amax;
    const float max = signed_absmax(v, kSuperBlock, &amax);
    if (!amax) {
      // ggml leaves bsums unwritten here; they are the sums of the zero codes.
      y[b].d = 0;
      std::memset(y[b].qs, 0, sizeof y[b].qs);
      std::memset(y[b].bsums, 0, sizeof y[b].bsums);
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < 256; ++j) {
      const int q = nearest_int(iscale * v[j]);
      y[b].qs[j] = static_cast<int8_t>(q < 127 ? q : 127);
    }
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[b].qs[16 * g + j];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1 / iscale;
  }
}

void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n) {
  const int64_t blocks = block_count(n, kSuperBlock, "dequantize_row_q8_K");
  for (int64_t b = 0; b < blocks; ++b)
    for (int j = 0; j < 256; ++j) y[b * kSuperBlock + j] = x[b].d * static_cast<float>(x[b].qs[j]);
}

FFN_BLOCK_CODEC(q6_K, BlockQ6_K, kSuperBlock)
FFN_BLOCK_CODEC(q5_K, BlockQ5_K, kSuperBlock)
FFN_BLOCK_CODEC(q4_K, BlockQ4_K, kSuperBlock)
FFN_BLOCK_CODEC(q3_K, BlockQ3_K, kSuperBlock)
FFN_BLOCK_CODEC(q2_K, BlockQ2_K, kSuperBlock)
FFN_BLOCK_CODEC(iq4_xs, BlockIQ4_XS, kSuperBlock)
FFN_BLOCK_CODEC(q8_K, BlockQ8_K, kSuperBlock)

}  // namespace ffn
