// The expert-parallel MoE layer (include/ffn/expert_parallel.hpp): each rank's experts on the
// rows the ranks exchange for them, and each token's sum on the rank that owns it.
//
// Bit-identity with MoeBlock::forward: the same counting sort (sort_by_expert) and the same
// sum of each token's outputs (combine_expert_outputs, src/moe/expert_pairs.hpp) — one
// definition for both; tests/mpi/test_expert_parallel.cpp holds them to the same bits.
#include "ffn/expert_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "block/view_checks.hpp"
#include "ffn/error.hpp"
#include "moe/expert_pairs.hpp"

namespace ffn {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Every rank's outcome of a stage, agreed before the next collective: this rank's own error
// is rethrown; a rank that succeeded throws naming the lowest rank that failed. `error` is
// empty when this rank succeeded.
void agree(Communicator& comm, const std::string& error, const std::string& stage) {
  const double lowest_failed = comm.max(error.empty() ? 0.0 : double(comm.size() - comm.rank()));
  if (lowest_failed == 0.0) return;
  if (!error.empty()) throw Error(error);
  throw Error("expert-parallel MoE: rank " + std::to_string(comm.size() - int(lowest_failed)) + " failed " + stage +
              " (that rank reports why)");
}

// Runs f, returning its ffn::Error's (or other exception's) message, empty on success.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

std::string config_text(const MoeConfig& c) {
  return std::to_string(c.experts) + " experts (" + variant_name(c.expert.variant) + " d_model " +
         std::to_string(c.d_model()) + " hidden " + std::to_string(c.expert.hidden) + (c.expert.bias ? " bias" : "") +
         "), top " + std::to_string(c.top_k) + " by " + std::string(router_scoring_name(c.scoring)) +
         (c.normalize_top_k ? " renormalised" : "") + ", scaling " + std::to_string(c.routed_scaling) + ", groups " +
         std::to_string(c.groups) + "/" + std::to_string(c.top_groups) + (c.router_bias ? ", router bias" : "") +
         (c.choice_bias ? ", choice bias" : "") + ", shared hidden " + std::to_string(c.shared_hidden) +
         (c.shared_gate ? " gated" : "");
}

// FNV-1a over the configuration's text and the router's bits, cut to 52 bits so that a
// double carries it exactly through Communicator::max.
double fingerprint(const MoeConfig& c, const MoeRouter& r) {
  uint64_t h = 14695981039346656037ull;
  auto add = [&h](const void* data, size_t n) {
    const auto* b = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  const std::string text = config_text(c);
  add(text.data(), text.size());
  for (const Matrix* m : {&r.weight, &r.bias, &r.choice_bias, &r.shared_gate})
    if (m->size() > 0) add(m->data(), sizeof(float) * size_t(m->size()));
  return double(h >> 12);
}

}  // namespace

ExpertRange expert_range(int64_t experts, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw Error("expert range: rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " is not a rank");
  if (experts < 1) throw Error("expert range: experts = " + std::to_string(experts) + ": must be ≥ 1");
  if (ranks > experts)
    throw Error("cannot split " + std::to_string(experts) + " experts over " + std::to_string(ranks) +
                " processes: expert parallelism gives every process at least one expert, so use at most " +
                std::to_string(experts) + " processes");
  const auto [begin, end] = split_range(experts, rank, ranks);
  return {begin, end};
}

ExpertParallelMoe::ExpertParallelMoe(const MoeConfig& config, MoeRouter router,
                                     std::vector<InferenceBlock> local_experts, std::optional<InferenceBlock> shared,
                                     Communicator& comm)
    : config_(config), router_(std::move(router)), experts_(std::move(local_experts)), shared_(std::move(shared)),
      comm_(&comm) {
  // First the ranks agree on what they hold (configuration and router), so that the local
  // checks below, which then fail alike on every rank or on none, never leave a rank behind.
  const double mine = fingerprint(config_, router_);
  if (comm.max(mine) != -comm.max(-mine))
    throw Error("expert-parallel MoE: the processes disagree on the layer's configuration or router weights (this "
                "process, rank " + std::to_string(comm.rank()) + ", holds " + config_text(config_) +
                "): every process must load the same layer");
  const std::string error = error_of([&] {
    validate(config_);
    if (config_.weight_input)
      throw Error("expert-parallel MoE: weight_input (Llama 4's routing weight on the experts' inputs) is not "
                  "supported here; run the layer as an ffn::MoeBlock");
    range_ = expert_range(config_.experts, comm.rank(), comm.size());
    if (int64_t(experts_.size()) != range_.size())
      throw Error("expert-parallel MoE: rank " + std::to_string(comm.rank()) + " holds experts " +
                  std::to_string(range_.begin) + "…" + std::to_string(range_.end - 1) + " (" +
                  std::to_string(range_.size()) + ") but was given " + std::to_string(experts_.size()));
    const BlockConfig& want = config_.expert;
    for (size_t i = 0; i < experts_.size(); ++i) {
      const BlockConfig& have = experts_[i].config();
      if (have.variant != want.variant || have.d_model != want.d_model || have.hidden != want.hidden ||
          have.bias != want.bias)
        throw Error("expert-parallel MoE: expert " + std::to_string(range_.begin + int64_t(i)) +
                    " is not of the configuration's shape (d_model " + std::to_string(have.d_model) + " hidden " +
                    std::to_string(have.hidden) + ", expected " + std::to_string(want.d_model) + " and " +
                    std::to_string(want.hidden) + ")");
    }
    if ((config_.shared_hidden > 0) != shared_.has_value())
      throw Error(shared_ ? "expert-parallel MoE: shared experts given, but the configuration has none"
                          : "expert-parallel MoE: the configuration has shared experts but none were given");
    if (shared_ && (shared_->config().d_model != config_.d_model() || shared_->config().hidden != config_.shared_hidden))
      throw Error("expert-parallel MoE: the shared experts are not of d_model " + std::to_string(config_.d_model()) +
                  " and hidden " + std::to_string(config_.shared_hidden));
    // The router's shapes, once here as MoeBlock checks them.
    (void)ffn::route(config_, router_, ConstMatrixView{nullptr, 0, config_.d_model(), config_.d_model()});
  });
  agree(comm, error, "to set up its experts");
}

ExpertParallelMoe ExpertParallelMoe::from_blocks(const MoeConfig& config, MoeRouter router,
                                                 const std::vector<Block>& experts, const std::optional<Block>& shared,
                                                 const MatrixTypes& types, Communicator& comm, ThreadPool* pool) {
  if (int64_t(experts.size()) != config.experts)
    throw Error("expert-parallel MoE: " + std::to_string(experts.size()) + " expert blocks given for a layer of " +
                std::to_string(config.experts) + " experts");
  // A split the constructor will refuse (P > E) leaves this rank's list empty: it reports why.
  std::vector<InferenceBlock> local;
  if (comm.size() <= config.experts) {
    const ExpertRange range = expert_range(config.experts, comm.rank(), comm.size());
    for (int64_t e = range.begin; e < range.end; ++e) local.emplace_back(experts[size_t(e)], types, pool);
  }
  std::optional<InferenceBlock> s;
  if (shared) s.emplace(*shared, types, pool);
  return ExpertParallelMoe(config, std::move(router), std::move(local), std::move(s), comm);
}

const InferenceBlock& ExpertParallelMoe::local_expert(int64_t e) const {
  if (!range_.holds(e))
    throw Error("expert-parallel MoE: expert " + std::to_string(e) + " is not held by rank " +
                std::to_string(comm_->rank()) + " (it holds " + std::to_string(range_.begin) + "…" +
                std::to_string(range_.end - 1) + ")");
  return experts_[size_t(e - range_.begin)];
}

void ExpertParallelMoe::forward(ConstMatrixView x, MatrixView y, ThreadPool* pool, ExpertParallelTimes* times) const {
  Communicator& comm = *comm_;
  const int P = comm.size(), me = comm.rank();
  const int64_t D = config_.d_model(), E = config_.experts, k = config_.top_k, T = x.rows;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  ExpertParallelTimes spent;
  auto start = Clock::now();

  Routing r;
  agree(comm, error_of([&] {
          views::check_forward_views(x, y, D);
          r = ffn::route(config_, router_, x, &p);
        }),
        "to route its tokens");
  const ExpertPairs s = sort_by_expert(r, E);

  // Counts for rank q: its experts' pair counts, in slots of W = the most experts a rank
  // holds (rank 0 holds the most); rows for rank q: contiguous in sorted order.
  const int64_t W = expert_range(E, 0, P).size();
  std::vector<ExpertRange> ranges(static_cast<size_t>(P));
  std::vector<int64_t> send_counts(size_t(P * W), 0), send_rows(static_cast<size_t>(P)), recv_counts(size_t(P * W)),
      recv_rows(static_cast<size_t>(P), 0);
  for (int q = 0; q < P; ++q) {
    ranges[q] = expert_range(E, q, P);
    for (int64_t e = ranges[q].begin; e < ranges[q].end; ++e)
      send_counts[q * W + (e - ranges[q].begin)] = s.offsets[e + 1] - s.offsets[e];
    send_rows[q] = s.offsets[ranges[q].end] - s.offsets[ranges[q].begin];
  }
  Matrix send(T * k, D);
  for (int64_t a = 0; a < T * k; ++a) std::memcpy(send.row(a), x.data + s.pair_token[a] * x.stride, sizeof(float) * D);
  spent.local_ms += ms_since(start);

  start = Clock::now();
  comm.alltoall(send_counts.data(), recv_counts.data(), W);
  int64_t R = 0;
  for (int q = 0; q < P; ++q) {
    for (int64_t i = 0; i < W; ++i) recv_rows[q] += recv_counts[q * W + i];
    R += recv_rows[q];
  }
  Matrix received(R, D);
  comm.alltoallv_rows(send.data(), send_rows.data(), received.data(), recv_rows.data(), D);
  spent.exchange_ms += ms_since(start);

  // The received rows lie by source rank, then by this rank's expert, then in the source's
  // token order. Expert i's batch: its rows from rank 0, then rank 1, …; its outputs go back
  // to the same positions, so the return trip is the first one reversed.
  start = Clock::now();
  Matrix returned(R, D), shared_out;
  const std::string error = error_of([&] {
    std::vector<int64_t> first(static_cast<size_t>(P));  // where source q's rows for the current expert start
    for (int64_t q = 0, at = 0; q < P; at += recv_rows[q], ++q) first[q] = at;
    for (int64_t i = 0; i < range_.size(); ++i) {
      int64_t n = 0;
      for (int q = 0; q < P; ++q) n += recv_counts[q * W + i];
      if (n == 0) continue;  // an expert no token chose: nothing read
      Matrix in(n, D), out(n, D);
      for (int64_t q = 0, row = 0; q < P; row += recv_counts[q * W + i], ++q)
        std::memcpy(in.row(row), received.row(first[q]), sizeof(float) * size_t(recv_counts[q * W + i] * D));
      experts_[size_t(i)].forward(in.view(), out.view(), &p);
      for (int64_t q = 0, row = 0; q < P; ++q) {
        const int64_t c = recv_counts[q * W + i];
        std::memcpy(returned.row(first[q]), out.row(row), sizeof(float) * size_t(c * D));
        first[q] += c;
        row += c;
      }
    }
    if (shared_ && T > 0) {  // (a rank without tokens has no shared output to make)
      shared_out = Matrix(T, D);
      shared_->forward(x, shared_out.view(), &p);
    }
  });
  spent.local_ms += ms_since(start);
  agree(comm, error, "to run its experts");

  start = Clock::now();
  Matrix outputs(T * k, D);  // sorted-pair order, as sent
  comm.alltoallv_rows(returned.data(), recv_rows.data(), outputs.data(), send_rows.data(), D);
  spent.exchange_ms += ms_since(start);

  start = Clock::now();
  combine_expert_outputs(config_, router_, x, r, s, outputs.view(), shared_ && T > 0 ? ConstMatrixView(shared_out.view()) : ConstMatrixView{}, y, p);
  spent.local_ms += ms_since(start);
  for (int q = 0; q < P; ++q)
    if (q != me) {
      spent.rows_sent += send_rows[q];
      spent.rows_received += recv_rows[q];
    }
  if (times) *times = spent;
}

void ExpertParallelMoe::forward_replicated(ConstMatrixView x, MatrixView y, ThreadPool* pool,
                                           ExpertParallelTimes* times) const {
  Communicator& comm = *comm_;
  const int P = comm.size(), me = comm.rank();
  const int64_t D = config_.d_model(), E = config_.experts, k = config_.top_k, T = x.rows;
  ThreadPool& p = pool ? *pool : default_thread_pool();
  ExpertParallelTimes spent;
  auto start = Clock::now();

  // Every rank routes all T tokens (the same bits on every rank) and fills its experts' rows
  // of the sorted [T·k][D] outputs: offsets[begin] … offsets[end], one block.
  Routing r;
  ExpertPairs s;
  Matrix outputs, shared_out;
  const std::string error = error_of([&] {
    views::check_forward_views(x, y, D);
    r = ffn::route(config_, router_, x, &p);
    s = sort_by_expert(r, E);
    outputs = Matrix(T * k, D);
    for (int64_t e = range_.begin; e < range_.end; ++e) {
      const int64_t first = s.offsets[e], n = s.offsets[e + 1] - first;
      if (n == 0) continue;
      Matrix in(n, D);
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(in.row(i), x.data + s.pair_token[first + i] * x.stride, sizeof(float) * D);
      experts_[size_t(e - range_.begin)].forward(in.view(), MatrixView{outputs.row(first), n, D, D}, &p);
    }
    if (shared_ && T > 0) {
      shared_out = Matrix(T, D);
      shared_->forward(x, shared_out.view(), &p);
    }
  });
  spent.local_ms += ms_since(start);
  agree(comm, error, "to run its experts");

  start = Clock::now();
  std::vector<int64_t> rows(static_cast<size_t>(P));
  for (int q = 0; q < P; ++q) {
    const ExpertRange rq = expert_range(E, q, P);
    rows[q] = s.offsets[rq.end] - s.offsets[rq.begin];
  }
  comm.allgather_rows(outputs.data(), rows.data(), D);
  spent.exchange_ms += ms_since(start);

  start = Clock::now();
  combine_expert_outputs(config_, router_, x, r, s, outputs.view(), shared_ && T > 0 ? ConstMatrixView(shared_out.view()) : ConstMatrixView{}, y, p);
  spent.local_ms += ms_since(start);
  for (int q = 0; q < P; ++q) (q == me ? spent.rows_sent : spent.rows_received) += rows[q];
  spent.rows_sent *= P - 1;  // this rank's block goes to every other rank
  if (times) *times = spent;
}

}  // namespace ffn
