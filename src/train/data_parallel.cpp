// Data parallelism inside the training loop (train/data_parallel.hpp).
#include "train/data_parallel.hpp"

#include <algorithm>

#include "ffn/thread_pool.hpp"

namespace ffn::train_detail {

Batch batch_share(const Batch& batch, int rank, int ranks) {
  const auto [begin, end] = split_range(batch.tokens(), rank, ranks);
  Batch b;
  b.window = batch.window;
  b.context.assign(batch.context.begin() + begin * batch.window, batch.context.begin() + end * batch.window);
  b.target.assign(batch.target.begin() + begin, batch.target.begin() + end);
  return b;
}

double sum_shares(Collective& group, const std::vector<ParameterRef>& params, std::vector<float>& flat, double loss,
                  int64_t share, int64_t total) {
  int64_t n = 0;
  for (const auto& p : params) n += p.size;
  flat.resize(size_t(n));
  // forward_backward gave the mean over this share: × share/total makes it this share's
  // part of the mean over the batch.
  const double weight = double(share) / double(total);
  const auto w = float(weight);
  float* at = flat.data();
  for (const auto& p : params)
    for (int64_t j = 0; j < p.size; ++j) *at++ = p.grad[j] * w;
  group.sum(flat.data(), n);
  at = flat.data();
  for (const auto& p : params) {
    std::copy(at, at + p.size, p.grad);
    at += p.size;
  }
  double batch_loss = loss * weight;
  group.sum(&batch_loss, 1);
  return batch_loss;
}

}  // namespace ffn::train_detail
