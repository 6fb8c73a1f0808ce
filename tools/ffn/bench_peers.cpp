// ffn bench --peers (see bench_peers.hpp): each peer is a program beside this ffn, run with
// the block's shape, answering one JSON line.
#include "bench_peers.hpp"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ffn/isa.hpp"
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

}  // namespace ffn::cli
