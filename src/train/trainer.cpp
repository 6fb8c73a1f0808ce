// The training loop: batches by (data_seed, step), forward and backward, global-norm
// clipping, AdamW under warm-up and cosine decay, the validation curve, checkpoints.
#include <chrono>
#include <cmath>

#include "ffn/error.hpp"
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"
#include "train/train.hpp"

namespace ffn {

TrainResult train(LanguageModel& model, const ByteData& data, const TrainOptions& o, ThreadPool* pool,
                  const std::function<void(int64_t, double)>& progress, const CheckpointOptions& checkpoint,
                  Collective* data_parallel) {
  validate(o);
  if (checkpoint.every < 0) throw Error("checkpoint every = " + std::to_string(checkpoint.every) + ": must be ≥ 0");
  const int ranks = data_parallel ? data_parallel->size() : 1, rank = data_parallel ? data_parallel->rank() : 0;
  if (o.batch < ranks)
    throw Error("training batch = " + std::to_string(o.batch) + ": fewer examples than the " + std::to_string(ranks) +
                " processes sharing each batch");
  std::vector<float> flat;  // every gradient, packed for the sum across processes
  const int64_t K = model.config().window;
  const Batch valid = spaced_batch(data.valid(), K, o.eval_tokens);
  ModelGradients grads = model.zero_gradients();
  const std::vector<ParameterRef> params = model.parameters_with(grads);
  AdamW optimizer(params, o);
  const std::string print = train_detail::fingerprint(model.config(), o, data);

  train_detail::RunState st;
  if (checkpoint.resume && !checkpoint.path.empty())
    train_detail::load_checkpoint(checkpoint.path, print, params, optimizer.state(), st);
  TrainResult& r = st.result;
  r.step_losses.reserve(size_t(o.steps));
  for (int64_t s = st.step; s < o.steps; ++s) {
    const Batch batch = sample_batch(data.train(), K, o.batch, o.data_seed, s);
    const auto start = std::chrono::steady_clock::now();
    for (const auto& p : params)
      for (int64_t j = 0; j < p.size; ++j) p.grad[j] = 0.0f;
    double loss = 0;
    if (ranks == 1) {
      loss = model.forward_backward(batch, &grads, pool);
    } else {
      const Batch share = train_detail::batch_share(batch, rank, ranks);
      loss = model.forward_backward(share, &grads, pool);
      loss = train_detail::sum_shares(*data_parallel, params, flat, loss, share.tokens(), batch.tokens());
    }
    if (!std::isfinite(loss))
      throw Error("training loss at step " + std::to_string(s) + " = " + std::to_string(loss) +
                  ": diverged (lower --lr?)");
    clip_gradients(params, o.clip);
    optimizer.step(learning_rate(o, s));
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.step_losses.push_back(loss);
    st.since_eval += loss;
    ++st.since_eval_steps;
    st.step = s + 1;
    if (st.step % o.eval_every == 0 || st.step == o.steps) {
      r.curve.push_back({st.step, st.since_eval / double(st.since_eval_steps), model.loss(valid, pool)});
      st.since_eval = 0;
      st.since_eval_steps = 0;
    }
    const bool due = checkpoint.every > 0 && st.step % checkpoint.every == 0;
    if (!checkpoint.path.empty() && rank == 0 && (due || st.step == o.steps))
      train_detail::save_checkpoint(checkpoint.path, print, params, optimizer.state(), st);
    if (progress) progress(st.step, loss);
  }
  r.valid_loss = r.curve.back().valid_loss;
  r.tokens_per_second = r.seconds > 0 ? double(o.steps * o.batch) / r.seconds : 0.0;
  return r;
}

}  // namespace ffn
