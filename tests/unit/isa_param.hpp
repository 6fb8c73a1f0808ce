// Parameterising tests over every ISA this CPU supports (Highway-style per-target tests).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ffn/isa.hpp"

namespace ffn::test {

inline std::string isa_param_name(const testing::TestParamInfo<Isa>& info) {
  return std::string(isa_name(info.param));
}

// Sets the ISA for one test and restores the previous one afterwards.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa) : previous_(active_isa()) { set_isa(isa); }
  ~ScopedIsa() { set_isa(previous_); }

 private:
  Isa previous_;
};

}  // namespace ffn::test

#define FFN_INSTANTIATE_FOR_EVERY_ISA(suite) \
  INSTANTIATE_TEST_SUITE_P(Isa, suite, testing::ValuesIn(ffn::supported_isas()), ffn::test::isa_param_name)
