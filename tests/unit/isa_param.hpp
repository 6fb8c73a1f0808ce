// Parameterising tests over every ISA this CPU supports (Highway-style per-target tests),
// and over every kernel registered in each ISA's table.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "ffn/isa.hpp"
#include "kernels/kernels.hpp"
#include "kernels/panel_family.hpp"

namespace ffn::test {

inline std::string isa_param_name(const testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); }

// Sets the ISA for one test and restores the previous one afterwards.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa) : previous_(active_isa()) { set_isa(isa); }
  ~ScopedIsa() { set_isa(previous_); }

 private:
  Isa previous_;
};

// The ops some kernel test checks. Each test of an op's contract notes its ops at static
// initialisation (checks_ops) and iterates registered_entries() over the same list;
// KernelRegistry.EveryRegisteredOpHasAChecker fails for a registered op that no test
// noted, so a kernel cannot be added to a table untested.
inline std::set<kernels::Op>& ops_with_checkers() {
  static std::set<kernels::Op> ops;
  return ops;
}

struct CheckedOps {
  std::vector<kernels::Op> ops;
};

inline CheckedOps checks_ops(std::initializer_list<kernels::Op> ops) {
  ops_with_checkers().insert(ops.begin(), ops.end());
  return {ops};
}

// The panel families some kernel test checks (checks_panels, as checks_ops):
// KernelRegistry.EveryRegisteredOpHasAChecker fails for a panel kernel whose type's family
// no test noted.
inline std::set<kernels::PanelFamily>& panel_families_with_checkers() {
  static std::set<kernels::PanelFamily> families;
  return families;
}
inline std::vector<kernels::PanelFamily> checks_panels(std::initializer_list<kernels::PanelFamily> families) {
  panel_families_with_checkers().insert(families.begin(), families.end());
  return families;
}

// A weight type's panel kernel registered on an ISA.
struct RegisteredPanel {
  WeightType type;
  const kernels::PanelKernel* kernel;
};
// Every panel kernel registered on `isa` (supported) for a type of one of `families`, in the
// list's order.
inline std::vector<RegisteredPanel> registered_panels(Isa isa, const std::vector<kernels::PanelFamily>& families) {
  const kernels::KernelTable& k = kernels::kernel_table(isa);
  std::vector<RegisteredPanel> out;
  for (const kernels::RegisteredKernel& r : kernels::registered_kernels(isa))
    if (r.op == kernels::Op::panel_gemm &&
        std::find(families.begin(), families.end(), kernels::panel_family(r.type)) != families.end())
      out.push_back({r.type, &k.panel(r.type)});
  return out;
}

// The entry of op `op` in table k, whose type must be Named<Fn> (empty otherwise).
template <class Fn>
kernels::Named<Fn> table_entry(const kernels::KernelTable& k, kernels::Op op) {
#define FFN_TEST_TABLE_ENTRY(type, field)          \
  if constexpr (std::is_same_v<kernels::type, Fn>) \
    if (op == kernels::Op::field) return k.field;
  FFN_KERNEL_OPS(FFN_TEST_TABLE_ENTRY)
#undef FFN_TEST_TABLE_ENTRY
  return {};
}

// Every kernel registered on `isa` (supported) for an op of `checked`, in table order, as
// the entry of type Fn that the test calls. An op of another type is a failure.
template <class Fn>
std::vector<kernels::Named<Fn>> registered_entries(Isa isa, const CheckedOps& checked) {
  const kernels::KernelTable& k = kernels::kernel_table(isa);
  std::vector<kernels::Named<Fn>> out;
  for (const kernels::RegisteredKernel& r : kernels::registered_kernels(isa)) {
    if (std::find(checked.ops.begin(), checked.ops.end(), r.op) == checked.ops.end()) continue;
    const kernels::Named<Fn> entry = table_entry<Fn>(k, r.op);
    if (entry) {
      out.push_back(entry);
    } else {
      ADD_FAILURE() << r.name << ": op " << kernels::op_name(r.op) << " is not of the type its checker takes";
    }
  }
  return out;
}

}  // namespace ffn::test

#define FFN_INSTANTIATE_FOR_EVERY_ISA(suite) \
  INSTANTIATE_TEST_SUITE_P(Isa, suite, testing::ValuesIn(ffn::supported_isas()), ffn::test::isa_param_name)
