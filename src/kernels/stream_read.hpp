// The memory roof's read loops (contract in kernels.hpp): a thread's share of the buffer
// read as Streams sequential streams at once — the share cut into Streams contiguous parts,
// each advanced by Lines cache lines per round — with full-width loads, summed in at most 4
// chains per stream.
//
// Why several patterns: a machine's memory can deliver very different rates to patterns
// that read the same bytes (docs/performance.md, "The kernels' constants") — a single
// pattern would judge the kernels against less than the machine gives. The roof is the best
// of them.
//   Returns a value depending on every load, so the reads cannot be optimised away.
#pragma once

#include <cstdint>

namespace ffn::kernels {

template <class V, int Streams, int Lines>
float stream_read(const float* p, int64_t floats) {
  constexpr int64_t kStep = 16 * Lines;            // floats a stream advances per round
  constexpr int kVectors = int(kStep / V::lanes);  // loads per stream per round
  constexpr int kChains = kVectors < 4 ? kVectors : 4;
  typename V::Vec acc[Streams][kChains];
#pragma GCC unroll 16
  for (int s = 0; s < Streams; ++s)
#pragma GCC unroll 4
    for (int c = 0; c < kChains; ++c) acc[s][c] = V::zero();
  const int64_t part = floats / Streams / kStep * kStep;
  for (int64_t i = 0; i < part; i += kStep) {
#pragma GCC unroll 16
    for (int s = 0; s < Streams; ++s)
#pragma GCC unroll 16
      for (int v = 0; v < kVectors; ++v)
        acc[s][v % kChains] = V::add(acc[s][v % kChains], V::load(p + s * part + i + v * V::lanes));
  }
  float sum = 0.0f;
  for (int s = 0; s < Streams; ++s)
    for (int c = 0; c < kChains; ++c) sum += V::reduce(acc[s][c]);
  for (int64_t i = Streams * part; i < floats; ++i) sum += p[i];  // what no full round covers
  return sum;
}

// The patterns the roof tries (kernels.hpp: kReadPatterns), as stream_read<V, S, L>.
template <class V>
float stream_read_pattern(const float* p, int64_t floats, int pattern) {
  switch (pattern) {
    case 1:
      return stream_read<V, 2, 1>(p, floats);
    case 2:
      return stream_read<V, 1, 1>(p, floats);
    default:
      return stream_read<V, 4, 4>(p, floats);
  }
}

}  // namespace ffn::kernels
