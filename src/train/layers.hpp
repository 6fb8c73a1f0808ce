// The language model's pieces around the blocks (src/train/model.cpp wires them up):
// threaded linear layers over the library's GEMM kernels, RMSNorm, the embedding gather and
// its scatter-add, and softmax cross-entropy. Shapes: T tokens, rows are tokens.
// Determinism: row-parallel work never changes a bit (each row's arithmetic is fixed and
// the kernels are split-invariant); every sum over tokens runs in token order on one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn::train_detail {

// y = x·wᵀ.  x: [T][I], w: [O][I] (nn.Linear), y: [T][O]. Split over tokens; the kernel
// is chosen by T alone, as the blocks' forward does.
void linear_forward(ThreadPool& pool, ConstMatrixView x, ConstMatrixView w, MatrixView y);

// dw += dyᵀ·x ([O][I], split over O) and, when dx.data is not null, dx = dy·w ([T][I]).
void linear_backward(ThreadPool& pool, ConstMatrixView x, ConstMatrixView w, ConstMatrixView dy, MatrixView dx,
                     MatrixView dw);

// y[t] = x[t] · rstd[t] ⊙ gain, rstd[t] = 1/√(mean_j x[t][j]² + 1e-5) (sum in double).
// x, y: [T][D]; gain: [D]; rstd: [T] (written, kept for backward).
void rmsnorm_forward(ThreadPool& pool, ConstMatrixView x, const float* gain, MatrixView y, float* rstd);

// With n̂ = x·rstd and a = dy ⊙ gain:  dx += rstd·(a − n̂·mean_j(a ⊙ n̂));  dgain += Σ_t dy ⊙ n̂.
// dx rows in parallel; dgain in token order.
void rmsnorm_backward(ThreadPool& pool, ConstMatrixView x, const float* gain, const float* rstd, ConstMatrixView dy,
                      MatrixView dx, float* dgain);

// out[t][j·E + e] = table[context[t·K + j]][e].  table: [256][E], out: [T][K·E].
void embedding_gather(ConstMatrixView table, const uint8_t* context, int64_t K, MatrixView out);
// dtable[context[t·K + j]] += dout[t][j·E …], in (t, j) order.
void embedding_scatter_add(ConstMatrixView dout, const uint8_t* context, int64_t K, MatrixView dtable);

// Mean over tokens of −log softmax(logits[t])[target[t]] (each row in double, summed in
// token order). When dlogits.data is not null it receives (softmax − onehot)/T.
// logits, dlogits: [T][256].
double softmax_cross_entropy(ThreadPool& pool, ConstMatrixView logits, const uint8_t* target, MatrixView dlogits);

}  // namespace ffn::train_detail
