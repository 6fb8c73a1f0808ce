// ffn bench --peers: the same block timed by the peers, each in its own process (so no
// library's idle threads spin beside ffn's pool), in the same run as ffn's rows:
//   oneDNN  — ffn-peer-onednn (built beside ffn when libdnnl-dev is present): oneDNN's
//             matmul primitive, three products with the activation fused as post-ops;
//   PyTorch — pytorch_peer.py running the seeds' module code under Debian's python3 with
//             OPENBLAS_CORETYPE set to the widest core type this CPU runs (SkylakeX with
//             AVX-512, Haswell with AVX2), which OpenBLAS otherwise may not pick; in f32,
//             or in bf16 (module and input cast to torch.bfloat16) against bf16 rows.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ffn/config.hpp"

namespace ffn::cli {

struct PeerTimes {
  std::string library;           // e.g. "oneDNN 2.6.3"; empty when the peer did not run
  std::map<int64_t, double> ms;  // median ms per token count
  double check_rel_err = -1;     // oneDNN's output vs double precision (see onednn_peer.cpp); -1: not checked
  std::string error;             // why the peer did not run, when it did not
};

PeerTimes run_onednn_peer(const BlockConfig& config, const std::vector<int64_t>& tokens, int threads, int reps);
// dtype: "f32" or "bf16".
PeerTimes run_pytorch_peer(const BlockConfig& config, const std::string& dtype, const std::vector<int64_t>& tokens,
                           int threads, int reps);

}  // namespace ffn::cli
