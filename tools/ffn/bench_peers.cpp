// ffn bench --peers (see bench_peers.hpp): each peer is a program beside this ffn, run with
// the block's shape, answering one JSON line.
#include "bench_peers.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

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

// A number as a peer's command line takes it, exactly enough (1e-06, 20, 2.5).
std::string shell_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Neither peer has the formulas of swiglu_oai or of Hugging Face's quick_gelu, relu2 and
// relu6: the oneDNN peer knows the seeds' eltwise activations only, and the PyTorch peer
// runs only the seeds' modules. "" for an activation both run.
std::string no_peer_formula(Activation a) {
  switch (a) {
    case Activation::clamped_swish: return "it has no formula for swiglu_oai (gpt-oss's clamped gate)";
    case Activation::quick_gelu:
    case Activation::relu2:
    case Activation::relu6:
      return "it has no formula for " + std::string(activation_name(a)) + " (the peers run the seeds' activations)";
    default: return "";
  }
}

PeerTimes not_run(std::string why) {
  PeerTimes out;
  out.error = std::move(why);
  return out;
}

// A duration as the notes print it: "52.3 s", "840 ms", "0.0521 ms".
std::string duration(double seconds) {
  char buf[32];
  if (seconds >= 1)
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  else
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  return buf;
}

std::string budget_text(double budget_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", budget_s);
  return buf;
}

// What a peer process printed, and how it ended.
struct PeerProcess {
  std::string text, last;  // everything it printed (stdout and stderr), and its last line
  int status = -1;         // waitpid's status
  bool killed = false;     // past its deadline: its whole process group killed
  bool began_timing = false;
  double killed_after_s = 0;  // seconds from its warm-up's start (or from its own start) to the kill
};

using Clock = std::chrono::steady_clock;

// Runs `command` under /bin/sh in a process group of its own, reading what it prints. The
// deadline: setup_limit_s from the start until the peer prints a line {"timing": T} (just
// before its warm-up forward), then row_limit_s from each such line. Past it the group (the
// shell, the peer and anything it started) is killed with SIGKILL.
PeerProcess run_with_deadline(const std::string& command, double setup_limit_s, double row_limit_s) {
  PeerProcess out;
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {  // the child: async-signal-safe calls only (the parent has threads)
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so that a kill right after fork finds the group
  close(fds[1]);
  auto phase_start = Clock::now();
  auto deadline =
      phase_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(setup_limit_s));
  std::string pending;  // the line being read
  auto take_line = [&](const std::string& line) {
    if (line.empty()) return;
    out.last = line;
    if (line.find("\"timing\"") == std::string::npos) return;
    try {
      if (!nlohmann::json::parse(line).contains("timing")) return;
    } catch (const std::exception&) {
      return;
    }
    out.began_timing = true;
    phase_start = Clock::now();
    deadline = phase_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(row_limit_s));
  };
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      out.killed = true;
      out.killed_after_s = std::chrono::duration<double>(Clock::now() - phase_start).count();
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, int(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output: the peer (and its children) closed it
    out.text.append(buf, size_t(n));
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        take_line(pending);
        pending.clear();
      } else {
        pending += buf[i];
      }
    }
  }
  take_line(pending);
  close(fds[0]);
  while (waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  return out;
}

// Runs a peer for the token counts of `tokens` under the budget and parses the last line it
// prints: {"library": ..., "ms": {"T": ms}, "reps": {"T": n}, "over_budget": {"T": warm-up ms}}.
PeerTimes run_peer(const std::string& command, const std::vector<int64_t>& tokens, double budget_s) {
  PeerTimes out;
  PeerProcess p;
  try {
    p = run_with_deadline(command, kPeerSetupLimitS, 2 * budget_s + kPeerKillMarginS);
  } catch (const std::exception& e) {
    out.error = "could not start: " + std::string(e.what()) + ": " + command;
    return out;
  }
  if (p.killed) {
    if (!p.began_timing) {
      out.error = "killed: no forward began within " + budget_text(kPeerSetupLimitS) + " of its start";
      return out;
    }
    // One token count per process in ffn bench: that row is skipped, the peer goes on.
    for (int64_t T : tokens)
      out.skipped[T] = "killed after " + duration(p.killed_after_s) + " without a result: one forward at this T " +
                       "takes longer than the " + budget_text(budget_s) + " budget allows (hard limit 2 × budget + " +
                       budget_text(kPeerKillMarginS) + ")";
    return out;
  }
  try {
    if (p.status != 0) throw std::runtime_error("exit status " + std::to_string(p.status));
    const auto j = nlohmann::json::parse(p.last);
    out.library = j.at("library").get<std::string>();
    for (const auto& [t, ms] : j.at("ms").items()) out.ms[std::stoll(t)] = ms.get<double>();
    if (j.contains("reps"))
      for (const auto& [t, n] : j["reps"].items()) out.reps[std::stoll(t)] = n.get<int>();
    if (j.contains("over_budget"))
      for (const auto& [t, warm_ms] : j["over_budget"].items())
        out.skipped[std::stoll(t)] = "one forward took " + duration(warm_ms.get<double>() * 1e-3) + ", over the " +
                                     budget_text(budget_s) + " budget";
    if (j.contains("check_rel_err")) out.check_rel_err = j["check_rel_err"].get<double>();
  } catch (const std::exception& e) {
    out.library.clear();
    out.error = std::string(e.what()) + "; it printed:\n" + p.text.substr(0, 2000);
  }
  return out;
}

// oneDNN's ISA name for ffn's active ISA: the most it lets a peer's oneDNN use (ONEDNN_MAX_CPU_ISA).
// None at the widest level, and none at ffn's default where that stops below the widest
// (avx512_vnni on Intel's cores with avx512_bf16, whose bf16 widening beat vdpbf16ps there:
// ffn's own best choice, so the peers too keep all this CPU has, their bf16 and AMX kernels
// included); none on other architectures: the peers' libraries pick their own kernels there.
const char* onednn_isa_ceiling() {
#if defined(__x86_64__)
  if (active_isa() == default_isa() && default_isa() != supported_isas().back()) return nullptr;
  switch (active_isa()) {
    case Isa::scalar:  // the peers have no scalar path: AVX2 is the narrowest they get
    case Isa::avx2:
      return "AVX2";
    case Isa::avx2_vnni:
      return "AVX2_VNNI";
    case Isa::avx512:
      return "AVX512_CORE";
    case Isa::avx512_vnni:
      return "AVX512_CORE_VNNI";
    case Isa::avx512_bf16:
    case Isa::amx_int8:
      break;
  }
#endif
  return nullptr;
}

// Whether ffn's kernels are x86-64's AVX2 or narrower (the peers then are kept to AVX2).
bool avx2_or_less() {
#if defined(__x86_64__)
  const Isa isa = active_isa();
  return isa == Isa::scalar || isa == Isa::avx2 || isa == Isa::avx2_vnni;
#else
  return false;
#endif
}

// The environment that keeps the oneDNN peer within ffn's ISA (FFN_ISA narrows ffn's own
// kernels only; oneDNN dispatches on the CPU itself).
std::string onednn_ceiling_env() {
  const char* ceiling = onednn_isa_ceiling();
  return ceiling ? std::string("ONEDNN_MAX_CPU_ISA=") + ceiling + " DNNL_MAX_CPU_ISA=" + ceiling + " " : "";
}

// The same for PyTorch: ATen's kernels by ATEN_CPU_CAPABILITY, its bf16 matmul (oneDNN) by
// ONEDNN_MAX_CPU_ISA, except at AVX2: oneDNN 2.6 has no AVX2 bf16 matmul and PyTorch 1.13
// then fails ("could not create a primitive descriptor iterator") rather than fall back, so
// the peer turns its oneDNN off (--no-onednn) and runs ATen's own bf16 GEMM — what PyTorch
// runs on a CPU without AVX-512 (f32 is OpenBLAS's either way).
std::string pytorch_ceiling_env() {
  const char* ceiling = onednn_isa_ceiling();
  if (!ceiling) return {};
  if (avx2_or_less()) return "ATEN_CPU_CAPABILITY=avx2 ";
  return "ATEN_CPU_CAPABILITY=avx512 " + onednn_ceiling_env();
}

}  // namespace

std::string peer_isa_ceiling() {
  const char* ceiling = onednn_isa_ceiling();
  return ceiling ? ceiling : "";
}

PeerTimes run_onednn_peer(const BlockConfig& config, const std::vector<int64_t>& tokens, int threads, int reps,
                          double budget_s) {
  if (const std::string why = no_peer_formula(config.variant.activation); !why.empty()) return not_run(why);
  const auto exe = beside_this_program("ffn-peer-onednn");
  if (!std::filesystem::exists(exe)) return not_run("not built (libdnnl-dev was not found when ffn was configured)");
  std::string cmd = onednn_ceiling_env() + "OMP_NUM_THREADS=" + std::to_string(threads);
  cmd += " OMP_PROC_BIND=false " + quoted(exe.string());
  cmd += " --activation " + std::string(activation_name(config.variant.activation));
  cmd += std::string(" --gated ") + (config.variant.gated ? "1" : "0");
  cmd += " --d " + std::to_string(config.d_model) + " --hidden " + std::to_string(config.hidden);
  cmd += " --tokens " + joined(tokens) + " --reps " + std::to_string(reps) + " --budget " + shell_number(budget_s);
  return run_peer(cmd, tokens, budget_s);
}

PeerTimes run_pytorch_peer(const BlockConfig& config, const std::string& dtype, const std::vector<int64_t>& tokens,
                           int threads, int reps, double budget_s) {
  if (const std::string why = no_peer_formula(config.variant.activation); !why.empty()) return not_run(why);
  const auto script = shipped_file("peers", "pytorch_peer.py");
  if (!std::filesystem::exists(script)) return not_run("pytorch_peer.py not found at " + script.string());
  const char* python = std::getenv("FFN_PYTHON");  // Debian's python3 has python3-torch
  std::string cmd = pytorch_ceiling_env();
  if (onednn_isa_ceiling()) cmd += std::string("OPENBLAS_CORETYPE=") + (avx2_or_less() ? "Haswell " : "SkylakeX ");
  cmd += "OMP_NUM_THREADS=" + std::to_string(threads);
  cmd += " " + quoted(python && *python ? python : "/usr/bin/python3") + " " + quoted(script.string());
  cmd += " --variant " + variant_name(config.variant) + " --dtype " + quoted(dtype);
  cmd += " --d " + std::to_string(config.d_model) + " --hidden " + std::to_string(config.hidden);
  cmd += " --tokens " + joined(tokens) + " --threads " + std::to_string(threads) + " --reps " + std::to_string(reps);
  cmd += " --budget " + shell_number(budget_s);
#if defined(__x86_64__)
  if (avx2_or_less() && isa_supported(Isa::avx512)) cmd += " --no-onednn";
#endif
  return run_peer(cmd, tokens, budget_s);
}

namespace {

// One peer of the table: how to run it for one token count, and its state over the rows.
struct Peer {
  const char* name;      // as printed: "oneDNN", "PyTorch", "PyTorch bf16"
  const char* json_key;  // "onednn" or "pytorch": row["peers"][key + "_ms"]
  std::function<PeerTimes(int64_t T)> run;
  std::string error{};         // first failure; the peer is not run again
  std::string library{};       // as the peer named it
  double check_rel_err = -1;   // worst over its runs (oneDNN checks its output each run)
  int64_t over_budget_at = 0;  // the smallest T skipped for time; larger T are not run
  std::string over_budget_why{};
};

// A peer's time at T and ffn's beside it.
struct Beside {
  bool ran = false;  // false: the peer did not run, or has no such row
  double peer_ms = 0;
  double ffn_ms = 0;
  int reps = 0;         // the repetitions the peer's median is of
  std::string skipped;  // why the row was not timed under the budget; empty otherwise
};

// (peer ms, ffn ms beside it, ffn's speed-up) as table cells; "-" where the peer did not run,
// "skipped" where the budget left it out.
std::string cells(const Beside& b) {
  char line[64];
  if (!b.ran) {
    std::snprintf(line, sizeof line, "%12s %10s %9s", b.skipped.empty() ? "-" : "skipped", "-", "-");
  } else {
    const std::string up = fixed(b.peer_ms / b.ffn_ms, 2) + "x";
    std::snprintf(line, sizeof line, "%12s %10s %9s", fixed(b.peer_ms, 3).c_str(), fixed(b.ffn_ms, 3).c_str(),
                  up.c_str());
  }
  return line;
}

}  // namespace

void report_peers(const BlockConfig& config, int threads, int reps, double budget_s, nlohmann::json& rows,
                  const TimeFfn& time_ffn) {
  Peer onednn{"oneDNN", "onednn", [&](int64_t T) { return run_onednn_peer(config, {T}, threads, reps, budget_s); }};
  Peer torch{"PyTorch", "pytorch",
             [&](int64_t T) { return run_pytorch_peer(config, "f32", {T}, threads, reps, budget_s); }};
  Peer torch_bf16{"PyTorch bf16", "pytorch",
                  [&](int64_t T) { return run_pytorch_peer(config, "bf16", {T}, threads, reps, budget_s); }};
  std::printf(
      "\npeers (same run, same block, same weight type, %d thread%s; each peer in its own process per token "
      "count, ffn timed again just before and after it: its ms is the mean of those two; each peer row within a "
      "budget of %s: a warm-up forward, then as many of the %d repetitions as fit)\n",
      threads, threads == 1 ? "" : "s", budget_text(budget_s).c_str(), reps);
  if (!peer_isa_ceiling().empty())
    std::printf(
        "peers' libraries kept within ffn's ISA %s: oneDNN by ONEDNN_MAX_CPU_ISA=%s; PyTorch by "
        "ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE, %s\n",
        std::string(isa_name(active_isa())).c_str(), peer_isa_ceiling().c_str(),
        avx2_or_less() ? "its oneDNN off (bf16: ATen's own GEMM, as on a CPU without AVX-512)"
                       : "its oneDNN (bf16 matmul) by ONEDNN_MAX_CPU_ISA");
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
    std::vector<std::string> notes;
    for (Peer* peer : peers) {
      auto& out = beside[peer->json_key];
      std::string label = peer->name;  // as the notes name the row: "PyTorch bf16", "oneDNN f32"
      if (label.find(dtype) == std::string::npos) label += " " + dtype;
      if (!peer->error.empty()) continue;
      if (peer->over_budget_at > 0 && T > peer->over_budget_at) {
        out.skipped = "not run: at T = " + std::to_string(peer->over_budget_at) + " " + peer->over_budget_why;
      } else {
        const PeerTimes p = peer->run(T);
        const auto it = p.ms.find(T);
        if (const auto skip = p.skipped.find(T); skip != p.skipped.end()) {
          out.skipped = skip->second;
          if (peer->over_budget_at == 0 || T < peer->over_budget_at) {
            peer->over_budget_at = T;
            peer->over_budget_why = skip->second;
          }
        } else if (!p.error.empty() || it == p.ms.end()) {
          peer->error = p.error.empty() ? "no time for T = " + std::to_string(T) : p.error;
          continue;
        } else {
          if (peer->library.empty()) peer->library = p.library;
          // The worst check so far; NaN (a broken peer) is kept.
          if (std::isnan(p.check_rel_err) || p.check_rel_err > peer->check_rel_err)
            peer->check_rel_err = p.check_rel_err;
          const double ffn_after = time_ffn(dtype, T);
          const auto n = p.reps.find(T);
          out = Beside{true, it->second, 0.5 * (ffn_before + ffn_after), n == p.reps.end() ? reps : n->second, {}};
          ffn_before = ffn_after;
          if (out.reps < reps)
            notes.push_back(label + " T=" + std::to_string(T) + ": median of " + std::to_string(out.reps) +
                            " repetition" + (out.reps == 1 ? "" : "s") + ", as many as fit the " +
                            budget_text(budget_s) + " budget");
        }
      }
      if (!out.skipped.empty()) notes.push_back(label + " T=" + std::to_string(T) + " skipped: " + out.skipped);
    }
    for (const auto& [key, b] : beside) {
      row["peers"][key + "_ms"] = b.ran ? nlohmann::json(b.peer_ms) : nlohmann::json(nullptr);
      row["peers"]["ffn_ms_beside_" + key] = b.ran ? nlohmann::json(b.ffn_ms) : nlohmann::json(nullptr);
      row["peers"][key + "_reps"] = b.ran ? nlohmann::json(b.reps) : nlohmann::json(nullptr);
      row["peers"][key + "_skipped"] = b.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.skipped);
    }
    std::printf("%-6s %6lld %s %s\n", dtype.c_str(), static_cast<long long>(T), cells(beside["onednn"]).c_str(),
                cells(beside["pytorch"]).c_str());
    for (const auto& note : notes) std::printf("  %s\n", note.c_str());
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
