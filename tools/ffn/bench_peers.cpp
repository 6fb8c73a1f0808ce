// ffn bench --peers (see bench_peers.hpp): each peer is a program beside this ffn, run with
// the block's shape, answering one JSON line.
#include "bench_peers.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ffn/isa.hpp"
#include "format.hpp"
#include "shipped_files.hpp"

namespace ffn::cli {
namespace {

// 'text' as one shell word.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string joined(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
}

PeerTimes not_run(std::string why) {
  PeerTimes out;
  out.error = std::move(why);
  return out;
}

// Runs `command`, parses the last line it prints as {"library": ..., "ms": {"T": ms}}.
PeerTimes run_peer(const std::string& command) {
  PeerTimes out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    out.error = "could not start: " + command;
    return out;
  }
  std::string text, last;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) {
    text += buf;
    if (buf[0] != '\n') last = buf;
  }
  const int status = pclose(pipe);
  try {
    if (status != 0) throw std::runtime_error("exit status " + std::to_string(status));
    const auto j = nlohmann::json::parse(last);
    out.library = j.at("library").get<std::string>();
    for (const auto& [t, ms] : j.at("ms").items()) out.ms[std::stoll(t)] = ms.get<double>();
    if (j.contains("check_rel_err")) out.check_rel_err = j["check_rel_err"].get<double>();
  } catch (const std::exception& e) {
    out.library.clear();
    out.error = std::string(e.what()) + "; it printed:\n" + text.substr(0, 2000);
  }
  return out;
}

}  // namespace

PeerTimes run_onednn_peer(const BlockConfig& config, const std::vector<int64_t>& tokens, int threads, int reps) {
  const auto exe = beside_this_program("ffn-peer-onednn");
  if (!std::filesystem::exists(exe)) return not_run("not built (libdnnl-dev was not found when ffn was configured)");
  std::string cmd = "OMP_NUM_THREADS=" + std::to_string(threads);
  cmd += " OMP_PROC_BIND=false " + quoted(exe.string());
  cmd += " --activation " + std::string(activation_name(config.variant.activation));
  cmd += std::string(" --gated ") + (config.variant.gated ? "1" : "0");
  cmd += " --d " + std::to_string(config.d_model) + " --hidden " + std::to_string(config.hidden);
  cmd += " --tokens " + joined(tokens) + " --reps " + std::to_string(reps);
  return run_peer(cmd);
}

PeerTimes run_pytorch_peer(const BlockConfig& config, const std::string& dtype, const std::vector<int64_t>& tokens,
                           int threads, int reps) {
  const auto script = shipped_file("peers", "pytorch_peer.py");
  if (!std::filesystem::exists(script)) return not_run("pytorch_peer.py not found at " + script.string());
  const char* python = std::getenv("FFN_PYTHON");  // Debian's python3 has python3-torch
  const std::string core = isa_supported(Isa::avx512) ? "SkylakeX" : "Haswell";
  std::string cmd = "OPENBLAS_CORETYPE=" + core;
  cmd += " OMP_NUM_THREADS=" + std::to_string(threads);
  cmd += " " + quoted(python && *python ? python : "/usr/bin/python3") + " " + quoted(script.string());
  cmd += " --variant " + variant_name(config.variant) + " --dtype " + quoted(dtype);
  cmd += " --d " + std::to_string(config.d_model) + " --hidden " + std::to_string(config.hidden);
  cmd += " --tokens " + joined(tokens) + " --threads " + std::to_string(threads) + " --reps " + std::to_string(reps);
  return run_peer(cmd);
}

namespace {

// One peer of the table: how to run it for one token count, and its state over the rows.
struct Peer {
  const char* name;      // as printed: "oneDNN", "PyTorch", "PyTorch bf16"
  const char* json_key;  // "onednn" or "pytorch": row["peers"][key + "_ms"]
  std::function<PeerTimes(int64_t T)> run;
  std::string error;          // first failure; the peer is not run again
  std::string library;        // as the peer named it
  double check_rel_err = -1;  // worst over its runs (oneDNN checks its output each run)
};

// A peer's time at T and ffn's beside it.
struct Beside {
  bool ran = false;  // false: the peer did not run, or has no such row
  double peer_ms = 0;
  double ffn_ms = 0;
};

// (peer ms, ffn ms beside it, ffn's speed-up) as table cells; "-" where the peer did not run.
std::string cells(const Beside& b) {
  char line[64];
  if (!b.ran) {
    std::snprintf(line, sizeof line, "%12s %10s %9s", "-", "-", "-");
  } else {
    const std::string up = fixed(b.peer_ms / b.ffn_ms, 2) + "x";
    std::snprintf(line, sizeof line, "%12s %10s %9s", fixed(b.peer_ms, 3).c_str(), fixed(b.ffn_ms, 3).c_str(),
                  up.c_str());
  }
  return line;
}

}  // namespace

void report_peers(const BlockConfig& config, int threads, int reps, nlohmann::json& rows, const TimeFfn& time_ffn) {
  Peer onednn{"oneDNN", "onednn", [&](int64_t T) { return run_onednn_peer(config, {T}, threads, reps); }, {}, {}};
  Peer torch{
      "PyTorch", "pytorch", [&](int64_t T) { return run_pytorch_peer(config, "f32", {T}, threads, reps); }, {}, {}};
  Peer torch_bf16{"PyTorch bf16",
                  "pytorch",
                  [&](int64_t T) { return run_pytorch_peer(config, "bf16", {T}, threads, reps); },
                  {},
                  {}};
  std::printf(
      "\npeers (same run, same block, same weight type, %d thread%s; each peer in its own process per token "
      "count, ffn timed again just before and after it: its ms is the mean of those two)\n",
      threads, threads == 1 ? "" : "s");
  std::printf("%-6s %6s %12s %10s %9s %12s %10s %9s\n", "dtype", "T", "oneDNN ms", "ffn ms", "speed-up", "PyTorch ms",
              "ffn ms", "speed-up");
  std::fflush(stdout);
  for (auto& row : rows) {
    if (row["pass"] != "forward" || (row["dtype"] != "f32" && row["dtype"] != "bf16")) continue;
    const std::string dtype = row["dtype"];
    const int64_t T = row["tokens"];
    const std::vector<Peer*> peers = dtype == "f32" ? std::vector<Peer*>{&onednn, &torch} : std::vector{&torch_bf16};
    // ffn, peer, ffn, peer, ffn: each peer between two fresh timings of the same row.
    double ffn_before = time_ffn(dtype, T);
    std::map<std::string, Beside> beside{{"onednn", {}}, {"pytorch", {}}};
    for (Peer* peer : peers) {
      auto& out = beside[peer->json_key];
      if (!peer->error.empty()) continue;
      const PeerTimes p = peer->run(T);
      const auto it = p.ms.find(T);
      if (!p.error.empty() || it == p.ms.end()) {
        peer->error = p.error.empty() ? "no time for T = " + std::to_string(T) : p.error;
        continue;
      }
      if (peer->library.empty()) peer->library = p.library;
      // The worst check so far; NaN (a broken peer) is kept.
      if (std::isnan(p.check_rel_err) || p.check_rel_err > peer->check_rel_err) peer->check_rel_err = p.check_rel_err;
      const double ffn_after = time_ffn(dtype, T);
      out = Beside{true, it->second, 0.5 * (ffn_before + ffn_after)};
      ffn_before = ffn_after;
    }
    for (const auto& [key, b] : beside) {
      row["peers"][key + "_ms"] = b.ran ? nlohmann::json(b.peer_ms) : nlohmann::json(nullptr);
      row["peers"]["ffn_ms_beside_" + key] = b.ran ? nlohmann::json(b.ffn_ms) : nlohmann::json(nullptr);
    }
    std::printf("%-6s %6lld %s %s\n", dtype.c_str(), static_cast<long long>(T), cells(beside["onednn"]).c_str(),
                cells(beside["pytorch"]).c_str());
    std::fflush(stdout);
  }
  std::string libraries;
  for (const Peer* p : {&onednn, &torch, &torch_bf16}) {
    if (!p->error.empty()) std::printf("  %s peer did not run: %s\n", p->name, p->error.c_str());
    if (!p->library.empty() && libraries.find(p->library) == std::string::npos)
      libraries += (libraries.empty() ? "" : "; ") + p->library;
  }
  std::printf("  %s\n", libraries.empty() ? "no peer ran" : libraries.c_str());
  if (!(onednn.check_rel_err < 0)) {  // checked (NaN included)
    std::printf("  oneDNN's output checked against double precision: max relative error %.2g\n", onednn.check_rel_err);
    if (!(onednn.check_rel_err < 1e-3)) std::printf("  WARNING: the oneDNN peer does not compute this block\n");
  }
}

}  // namespace ffn::cli
