// expect_error(f, {parts...}): f must throw ffn::Error whose message contains every part —
// errors are part of the contract: they name the field, file or tensor, and the value.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "ffn/error.hpp"

namespace ffn::test {

template <class F>
void expect_error(F f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no ffn::Error thrown";
  } catch (const Error& e) {
    for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

}  // namespace ffn::test
