// The machine line of `ffn bench`: the Arm core named from /proc/cpuinfo's numbers.
#include <gtest/gtest.h>

#include "machine.hpp"

namespace ffn::cli {
namespace {

TEST(ArmCpuName, NamesTheCoreByImplementerAndPart) {
  // As Linux prints it on a Graviton 2 (Neoverse N1), first CPU of several.
  const std::string graviton2 =
      "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
      "asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
      "CPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\nprocessor\t: 1\nCPU implementer\t: 0x41\n"
      "CPU part\t: 0xd40\n";
  EXPECT_EQ(arm_cpu_name(graviton2), "Arm Neoverse N1");
  EXPECT_EQ(arm_cpu_name("CPU implementer\t: 0x41\nCPU part\t: 0xd08\n"), "Arm Cortex-A72");
  EXPECT_EQ(arm_cpu_name("CPU implementer\t: 0x61\nCPU part\t: 0x022\n"), "Apple");
  EXPECT_EQ(arm_cpu_name("CPU implementer\t: 0x48\nCPU part\t: 0xd01\n"), "Arm implementer 0x48 part 0xd01");
  // x86's /proc/cpuinfo has neither field.
  EXPECT_EQ(arm_cpu_name("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\n"), "");
}

}  // namespace
}  // namespace ffn::cli
