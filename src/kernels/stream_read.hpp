// The memory roof's read loop (contract in kernels.hpp): a thread's share of the buffer
// read as Streams sequential streams at once — the share cut into Streams contiguous parts,
// each advanced by one 256-byte step (four cache lines) per round — with full-width loads.
//
// Why several streams: one stream per core leaves this machine's memory well short of what
// it delivers to the panel kernels (measured on 2 threads: 49 GB/s with one stream each,
// 73 with four, 66 with eight, 33 with sixteen; the f32 decode forward reads at 68–73).
//   Returns a value depending on every load, so the reads cannot be optimised away.
#pragma once

#include <cstdint>

namespace ffn::kernels {

template <class V, int Streams>
float stream_read(const float* p, int64_t floats) {
  constexpr int64_t kStep = 64;                   // floats a stream advances per round
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

}  // namespace ffn::kernels
