// A mixture-of-experts layer split across processes by experts (expert parallelism, the
// GShard / DeepSpeed-MoE scheme), over MPI, beside the tensor-parallel split of dense
// blocks (ffn/distributed.hpp).
//
// P ranks each hold a contiguous range of the E routed experts (expert_range: the first
// E mod P ranks hold one more; P > E is refused). Every rank holds the router (f32, the
// same on every rank) and the shared experts, replicated: each rank runs them on the
// tokens it computes the output of, so they cost no exchange (a tensor-parallel split of
// the shared experts would add an all-reduce for a block every token passes through).
//
// forward — each rank owns its tokens x_r [T_r][D] (T_r may differ between ranks, or be 0):
//   1. rank r routes its tokens (experts, weights [T_r][k]);
//   2. the (token, slot) pairs are sorted by expert (a counting sort, tokens in increasing
//      order), so that the pairs bound for each rank are contiguous (experts are held in
//      rank order); one all-to-all of per-expert counts, then one all-to-all of the rows x_t
//      (D floats each) — token t's row travels once per chosen expert held elsewhere;
//   3. each rank runs each of its experts on the rows it received for it, from every rank,
//      as one batch;
//   4. a second all-to-all returns the outputs to the tokens' owners, in the order they were
//      sent;
//   5. the owner sums each token's k weighted outputs in increasing expert index and adds
//      the gated shared output.
// Bytes crossing per token and forward: k rows of D f32 to the experts and k rows back,
// k·D·4 bytes each way, 2·k·D·4 in all (less the pairs whose expert the owning rank holds,
// which stay local: a share 1/P of them under uniform routing), plus ⌈E/P⌉ int64 counts per
// pair of ranks.
//
// forward_replicated — every rank holds the same tokens x [T][D] (as `mpirun ffn forward`
// reads one input file on every rank): every rank routes all T tokens, computes only its
// experts' rows of the sorted [T·k][D] buffer of expert outputs (they are contiguous, as
// experts are held in rank order), one all-gather fills in the others', and every rank
// sums and adds the shared output for all T tokens (the shared experts run on every rank).
//
// Bits: both forwards give, for each token, exactly MoeBlock::forward's bits on the same
// token: the router is a fixed per-token chain of f32 operations (moe.hpp); an expert's
// output for a token does not depend on the other tokens of its batch or the thread count
// (inference_block.hpp); and the weighted sum runs in the same order (increasing expert
// index, fma into zero, then fma of the gate with the shared output).
//
// Every rank must construct the block and call each forward together (they are
// collectives). Errors one rank sees (a token's non-finite logits, a q8_0 stage's
// non-finite activation, a bad view) are agreed on before the next exchange, so every rank
// throws ffn::Error rather than some waiting forever.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ffn/distributed.hpp"
#include "ffn/inference_block.hpp"
#include "ffn/moe.hpp"
#include "ffn/tensor.hpp"
#include "ffn/thread_pool.hpp"

namespace ffn {

struct ExpertRange {
  int64_t begin = 0, end = 0;  // [begin, end) of the E routed experts
  int64_t size() const { return end - begin; }
  bool holds(int64_t e) const { return e >= begin && e < end; }
};

// Rank `rank` of `ranks`' experts: contiguous, in rank order, the first E mod P ranks
// taking one more (E = 8 over 3 ranks: 3, 3, 2). ffn::Error when P > E (some rank would
// hold no expert), naming both.
ExpertRange expert_range(int64_t experts, int rank, int ranks);

// Time spent by the last forward on this rank: local work (routing, packing, this rank's
// experts, the shared experts and the sums) and the exchanges (counts and rows, both ways,
// waiting for the slowest rank included); rows this rank sent to and received from other
// ranks (its own pairs stay local and are not counted).
struct ExpertParallelTimes {
  double local_ms = 0, exchange_ms = 0;
  int64_t rows_sent = 0, rows_received = 0;
};

class ExpertParallelMoe {
 public:
  // This rank's experts: experts expert_range(E, rank, P).begin … end of `config`, in
  // order; the router and shared experts (when the config has them) of the whole layer.
  // Collective: the ranks check that they agree on the configuration and the router's
  // weights (ffn::Error on every rank naming the first disagreeing rank otherwise).
  ExpertParallelMoe(const MoeConfig& config, MoeRouter router, std::vector<InferenceBlock> local_experts,
                    std::optional<InferenceBlock> shared, Communicator& comm);
  // From every expert as an f32 block (tests; the same on every rank): only this rank's
  // experts are laid into inference blocks, every matrix stored as `types`.
  static ExpertParallelMoe from_blocks(const MoeConfig& config, MoeRouter router, const std::vector<Block>& experts,
                                       const std::optional<Block>& shared, const MatrixTypes& types,
                                       Communicator& comm, ThreadPool* pool = nullptr);

  const MoeConfig& config() const { return config_; }
  const MoeRouter& router() const { return router_; }
  ExpertRange range() const { return range_; }
  // Expert e (global index, within range()).
  const InferenceBlock& local_expert(int64_t e) const;
  const std::optional<InferenceBlock>& shared() const { return shared_; }
  Communicator& communicator() const { return *comm_; }

  // y_r = block(x_r) for this rank's own tokens. x, y: [T_r][D], y dense or strided, no
  // aliasing; T_r may be 0 (the rank still serves its experts).
  void forward(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr, ExpertParallelTimes* times = nullptr) const;
  // y = block(x) on every rank for the same x on every rank (x, y: [T][D]).
  void forward_replicated(ConstMatrixView x, MatrixView y, ThreadPool* pool = nullptr,
                          ExpertParallelTimes* times = nullptr) const;

 private:
  MoeConfig config_;
  MoeRouter router_;
  ExpertRange range_;
  std::vector<InferenceBlock> experts_;  // range_.size() blocks, experts range_.begin …
  std::optional<InferenceBlock> shared_;
  Communicator* comm_;
};

}  // namespace ffn
