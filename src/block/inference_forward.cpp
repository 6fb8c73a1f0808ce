// InferenceBlock::forward: two stages, each a sweep over panels laid out at construction
// (inference_panels.hpp), each panel multiplied by its weight type's panel kernel (one
// indirect call: the active ISA's KernelTable::panel_gemm) on the activations in the format
// that kernel takes (core/activation_formats.hpp: f32 as they are; bf16 rounded on
// AVX512_BF16; q8_0 or q8_K blocks for the integer panels), kept in the calling thread's
// scratch — x for the first stage, h for the down projection. The stages themselves are
// dense_batches.cpp's, which a mixture of experts runs over all its chosen experts at once.
// One kernel for every T: the weights stream once per 256 tokens whatever the batch (decode
// reads them at the memory roof; prefill reuses each panel block from cache), and every
// element is one fixed chain (kernels.hpp), so y is bit-identical for any thread count
// and any batch a token is in. Threads take a stage's panels in guided chunks
// (parallel/guided_chunks.hpp) rather than a fixed half each: on a shared machine one core
// often runs slower than the other, and the stage ends when its last panel does.
#include "block/inference_panels.hpp"
#include "block/inference_stages.hpp"
#include "block/view_checks.hpp"
#include "parallel/scratch.hpp"

namespace ffn {

void InferenceBlock::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool) const {
  const Panels& w = *panels_;
  views::check_forward_views(x, y, w.config.d_model);
  if (x.rows == 0) return;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  if (w.gate_first()) return inference::forward_gate_first(w, x, y, p);
  const inference::DenseBatch batch =
      inference::dense_batch(w, x, y, scratch_bytes(Scratch::dense_forward, inference::dense_batch_bytes(w, x.rows)));
  inference::forward_dense_batches(&batch, 1, p);
}

}  // namespace ffn
