#include "machine.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ffn::cli {
namespace {

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\n") - first + 1);
}

// One line of a sysfs file, "" if it cannot be read.
std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return trimmed(line);
}

// sysfs sizes read "32K", "1024K", "32768K" (or plain bytes).
int64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  int64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
  if (i < s.size() && (s[i] == 'K' || s[i] == 'k')) v *= 1024;
  if (i < s.size() && (s[i] == 'M' || s[i] == 'm')) v *= 1024 * 1024;
  return v;
}

// "0-1", "0,2", "0-3,8-11" → how many CPUs.
int count_cpus(const std::string& list) {
  int n = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const auto dash = part.find('-');
    if (dash == std::string::npos)
      n += part.empty() ? 0 : 1;
    else
      n += std::max(0, std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1);
  }
  return std::max(n, 1);
}

std::string size_text(int64_t bytes) {
  if (bytes >= (int64_t(1) << 20) && bytes % (int64_t(1) << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace

std::string arm_cpu_name(const std::string& cpuinfo) {
  // The cores people run language models on, by MIDR implementer and part number (Arm's
  // Technical Reference Manuals); others are named by their numbers.
  struct Core {
    unsigned implementer, part;
    const char* name;
  };
  static constexpr Core kCores[] = {
      {0x41, 0xd08, "Arm Cortex-A72"},  {0x41, 0xd0b, "Arm Cortex-A76"},  {0x41, 0xd0c, "Arm Neoverse N1"},
      {0x41, 0xd40, "Arm Neoverse V1"}, {0x41, 0xd49, "Arm Neoverse N2"}, {0x41, 0xd4f, "Arm Neoverse V2"},
      {0x41, 0xd8e, "Arm Neoverse N3"}, {0x41, 0xd84, "Arm Neoverse V3"}, {0x61, 0, "Apple"},
      {0xc0, 0, "Ampere"},
  };
  long implementer = -1, part = -1;
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line) && (implementer < 0 || part < 0)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trimmed(line.substr(0, colon)), value = trimmed(line.substr(colon + 1));
    if (key == "CPU implementer") implementer = std::strtol(value.c_str(), nullptr, 0);
    if (key == "CPU part") part = std::strtol(value.c_str(), nullptr, 0);
  }
  if (implementer < 0 || part < 0) return "";
  for (const Core& c : kCores)
    if (c.implementer == unsigned(implementer) && (c.part == unsigned(part) || c.part == 0)) return c.name;
  char text[64];
  std::snprintf(text, sizeof text, "Arm implementer 0x%02lx part 0x%03lx", implementer, part);
  return text;
}

MachineDescription describe_machine() {
  MachineDescription m;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    // Leaf 1 EAX: stepping [3:0], model [7:4], family [11:8], extended model [19:16],
    // extended family [27:20]; the extended fields count for family 15 (and model for 6).
    const int base_family = int(eax >> 8) & 0xF, base_model = int(eax >> 4) & 0xF;
    m.stepping = int(eax & 0xF);
    m.family = base_family == 0xF ? base_family + (int(eax >> 20) & 0xFF) : base_family;
    m.model = base_family == 0xF || base_family == 6 ? base_model | ((int(eax >> 16) & 0xF) << 4) : base_model;
  }
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4] = {};
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::copy_n(reinterpret_cast<const char*>(r), 16, brand + 16 * leaf);
    }
    m.cpu = trimmed(brand);
  }
#elif defined(__aarch64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::stringstream text;
  text << cpuinfo.rdbuf();
  m.cpu = arm_cpu_name(text.str());
#endif
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string level = read_line(dir + "level"), type = read_line(dir + "type");
    if (level.empty()) break;
    if (type == "Instruction") continue;  // the data side is what the kernels' blocking sees
    CacheLevel c;
    c.name = "L" + level + (type == "Data" ? "d" : "");
    c.bytes = parse_size(read_line(dir + "size"));
    c.sharing_cpus = count_cpus(read_line(dir + "shared_cpu_list"));
    if (c.bytes > 0) m.caches.push_back(c);
  }
  return m;
}

std::string machine_line(const MachineDescription& m) {
  std::string s = "cpu: " + (m.cpu.empty() ? std::string("unknown") : m.cpu);
  if (m.family > 0)
    s += " (x86 family " + std::to_string(m.family) + ", model " + std::to_string(m.model) + ", stepping " +
         std::to_string(m.stepping) + ")";
  if (!m.caches.empty()) {
    s += "; caches:";
    for (size_t i = 0; i < m.caches.size(); ++i) {
      const auto& c = m.caches[i];
      s += (i ? ", " : " ") + c.name + " " + size_text(c.bytes);
      if (c.sharing_cpus > 1) s += " shared by " + std::to_string(c.sharing_cpus) + " CPUs";
    }
  }
  return s;
}

nlohmann::json machine_json(const MachineDescription& m) {
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& c : m.caches)
    caches.push_back({{"level", c.name}, {"bytes", c.bytes}, {"sharing_cpus", c.sharing_cpus}});
  return {{"cpu", m.cpu}, {"family", m.family}, {"model", m.model}, {"stepping", m.stepping}, {"caches", caches}};
}

}  // namespace ffn::cli
