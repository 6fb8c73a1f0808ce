// ffn bench --peers: the same block timed by the peers, each in its own process (so no
// library's idle threads spin beside ffn's pool), in the same run as ffn's rows:
//   oneDNN  — ffn-peer-onednn (built beside ffn when libdnnl-dev is present): oneDNN's
//             matmul primitive, three products with the activation fused as post-ops;
//   PyTorch — pytorch_peer.py running the seeds' module code under Debian's python3 with
//             OPENBLAS_CORETYPE set to the widest core type this CPU runs (SkylakeX with
//             AVX-512, Haswell with AVX2), which OpenBLAS otherwise may not pick; in f32,
//             or in bf16 (module and input cast to torch.bfloat16) against bf16 rows.
// This machine is shared, so its speed drifts within a run: each peer runs one token count
// per process, and ffn's same row is timed again just before and just after it; the
// speed-up is over the mean of those two ffn times, not over ffn's row minutes earlier.
//
// Each peer row runs under a time budget (--peer-budget, seconds): the peer times one
// warm-up forward first and then only as many repetitions as fit in the budget (at most
// --reps); a row whose one forward already takes longer than the budget is skipped with
// that reason, and so are the peer's rows at larger T. A peer process is killed when it
// has no answer 2 × budget + kPeerKillMarginS after its warm-up began (the warm-up may take
// up to the budget and the repetitions the budget again), or kPeerSetupLimitS after it
// started when it never gets that far: never a silently endless run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ffn/config.hpp"

namespace ffn::cli {

constexpr double kPeerKillMarginS = 15;   // beyond 2 × budget after the warm-up began
constexpr double kPeerSetupLimitS = 180;  // from start to the warm-up (import torch, random weights)

struct PeerTimes {
  std::string library;                     // e.g. "oneDNN 2.6.3"; empty when the peer did not run
  std::map<int64_t, double> ms;            // median ms per token count
  std::map<int64_t, int> reps;             // the repetitions that median is of (fewer than asked to fit the budget)
  std::map<int64_t, std::string> skipped;  // token counts not timed: why (over the budget, or killed)
  double check_rel_err = -1;               // oneDNN's output vs double precision (see onednn_peer.cpp); -1: not checked
  std::string error;                       // why the peer did not run, when it did not
};

// FFN_ISA narrows ffn's kernels only; the peers' libraries are kept within the same ISA by
// their own switches (ONEDNN_MAX_CPU_ISA for oneDNN and PyTorch's oneDNN, ATEN_CPU_CAPABILITY,
// OPENBLAS_CORETYPE), so that FFN_ISA=avx2 on an AVX-512 machine compares AVX2 with AVX2.
// The ceiling in oneDNN's words ("AVX2", "AVX512_CORE", "AVX512_CORE_VNNI"); empty: none
// (ffn runs the widest ISA, avx512_bf16, or its default below it: default_isa()).
std::string peer_isa_ceiling();

PeerTimes run_onednn_peer(const BlockConfig& config, const std::vector<int64_t>& tokens, int threads, int reps,
                          double budget_s);
// dtype: "f32" or "bf16".
PeerTimes run_pytorch_peer(const BlockConfig& config, const std::string& dtype, const std::vector<int64_t>& tokens,
                           int threads, int reps, double budget_s);

// ffn's forward of the bench's block in weight type `dtype` ("f32" or "bf16") at T tokens,
// timed now: median ms of the bench's repetitions.
using TimeFfn = std::function<double(const std::string& dtype, int64_t T)>;

// Times the peers beside ffn's forward rows of the same weight type — f32 rows: oneDNN and
// PyTorch in f32; bf16 rows: PyTorch in bf16 — and prints the table a row at a time.
// Fills each such row's "peers" object: onednn_ms, pytorch_ms (null where the peer did not
// run or has no such row), ffn_ms_beside_onednn, ffn_ms_beside_pytorch (the mean of ffn's
// times either side of that peer), onednn_reps, pytorch_reps (the repetitions timed) and
// onednn_skipped, pytorch_skipped (null, or why the row was skipped under the budget). A
// peer that fails is reported once and not run again.
void report_peers(const BlockConfig& config, int threads, int reps, double budget_s, nlohmann::json& rows,
                  const TimeFfn& time_ffn);

}  // namespace ffn::cli
