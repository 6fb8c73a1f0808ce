// Runtime ISA choice over the levels of ffn/isa_list.hpp: what the CPU supports (each level's
// cpu_has_<name>() and, recursively, the level it extends), read once, and what FFN_ISA or
// set_isa() asks for.
#include "ffn/isa.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "ffn/error.hpp"
#include "kernels/cpu_features.hpp"

namespace ffn {
namespace kernels {

bool cpu_has_scalar() { return true; }
#if !(defined(__x86_64__) || defined(_M_X64) || defined(__aarch64__) || defined(_M_ARM64))
bool cpu_default_takes(Isa) { return true; }  // the scalar level alone
#endif

}  // namespace kernels

namespace {

struct Level {
  Isa isa;
  std::string_view name;
  Isa extends;
  bool (*cpu_has)();
};

// Narrowest first: the widest supported is the last of these the CPU has.
constexpr Level kLevels[] = {
#define FFN_ISA_LEVEL(name, extends, flags, summary) {Isa::name, #name, Isa::extends, kernels::cpu_has_##name},
    FFN_ISA_LEVELS(FFN_ISA_LEVEL)
#undef FFN_ISA_LEVEL
};
constexpr size_t kLevelCount = std::size(kLevels);

const Level& level(Isa isa) { return kLevels[static_cast<size_t>(isa)]; }

bool cpu_supports(Isa isa) {
  const Level& l = level(isa);
  return l.cpu_has() && (l.extends == isa || cpu_supports(l.extends));
}

constexpr int kUnset = -1;
std::atomic<int> g_active{kUnset};
std::once_flag g_env_once;

}  // namespace

std::string_view isa_name(Isa isa) {
  const auto i = static_cast<size_t>(isa);
  return i < kLevelCount ? kLevels[i].name : "?";
}

Isa isa_extends(Isa isa) { return level(isa).extends; }

const std::vector<Isa>& all_isas() {
  static const std::vector<Isa> all = [] {
    std::vector<Isa> v;
    for (const Level& l : kLevels) v.push_back(l.isa);
    return v;
  }();
  return all;
}

std::string isa_names(std::string_view separator) {
  std::string out;
  for (const Level& l : kLevels) out += (out.empty() ? "" : std::string(separator)) + std::string(l.name);
  return out;
}

Isa parse_isa(std::string_view name) {
  for (const Level& l : kLevels)
    if (l.name == name) return l.isa;
  throw Error("ISA '" + std::string(name) + "' is unknown; accepted: " + isa_names());
}

// Asked once: in a virtual machine cpuid traps to the hypervisor (microseconds), and the
// kernel table is looked up on every kernel call.
bool isa_supported(Isa isa) {
  static const std::array<bool, kLevelCount> supported = [] {
    std::array<bool, kLevelCount> s{};
    for (const Level& l : kLevels) s[static_cast<size_t>(l.isa)] = cpu_supports(l.isa);
    return s;
  }();
  const auto i = static_cast<size_t>(isa);
  return i < supported.size() && supported[i];
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (const Level& l : kLevels)
    if (isa_supported(l.isa)) out.push_back(l.isa);
  return out;
}

// The widest supported level the default may take on this CPU (kernels::cpu_default_takes).
Isa default_isa() {
  static const Isa chosen = [] {
    Isa best = Isa::scalar;
    for (Isa i : supported_isas())
      if (kernels::cpu_default_takes(i)) best = i;
    return best;
  }();
  return chosen;
}

void set_isa(Isa isa) {
  if (!isa_supported(isa)) throw Error("ISA " + std::string(isa_name(isa)) + " is not supported by this CPU");
  g_active.store(static_cast<int>(isa));
}

Isa active_isa() {
  std::call_once(g_env_once, [] {
    // The vendor whose kernel choices x86-64 takes (kernels::cpu_is_intel), named wrongly:
    // said here, where every use of the kernels begins.
    const char* vendor = std::getenv("FFN_CPU_VENDOR");
    if (vendor && *vendor && std::string(vendor) != "intel" && std::string(vendor) != "amd")
      throw Error("FFN_CPU_VENDOR=" + std::string(vendor) + ": expected intel or amd");
    if (g_active.load() != kUnset) return;  // set_isa() came first
    const char* env = std::getenv("FFN_ISA");
    if (env && *env) {
      const Isa want = parse_isa(env);
      if (!isa_supported(want)) throw Error("FFN_ISA=" + std::string(env) + ": this CPU does not support it");
      g_active.store(static_cast<int>(want));
    } else {
      g_active.store(static_cast<int>(default_isa()));
    }
  });
  return static_cast<Isa>(g_active.load());
}

}  // namespace ffn
