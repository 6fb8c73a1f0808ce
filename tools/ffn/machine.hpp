// What machine a benchmark ran on, so that a table of ratios says whose roofs they are:
// the CPU's name and x86 family / model / stepping (CPUID; a virtual machine may hide the
// full name, never these) — on Arm, the core named from /proc/cpuinfo's implementer and part
// numbers — and its caches as Linux reports them for CPU 0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ffn::cli {

struct CacheLevel {
  std::string name;  // "L1d", "L1i", "L2", "L3"
  int64_t bytes = 0;
  int sharing_cpus = 1;  // logical CPUs sharing this instance
};

struct MachineDescription {
  std::string cpu;  // CPUID brand string, "" where unknown
  int family = 0, model = 0, stepping = 0;
  std::vector<CacheLevel> caches;  // data and unified caches, by level (empty where unknown)
};

MachineDescription describe_machine();
// The Arm core of /proc/cpuinfo's text ("CPU implementer" and "CPU part" of its first CPU):
// "Arm Neoverse N1", or the two numbers; "" where the text has neither (not an Arm Linux).
std::string arm_cpu_name(const std::string& cpuinfo);
// "cpu: AMD EPYC (x86 family 25, model 17, stepping 1); caches: L1d 32 KiB, L2 1 MiB, L3 32 MiB shared by 2 CPUs"
std::string machine_line(const MachineDescription& m);
nlohmann::json machine_json(const MachineDescription& m);

}  // namespace ffn::cli
