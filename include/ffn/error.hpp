// ffn::Error — the one exception type the library throws for bad input: invalid
// configurations, shape mismatches, malformed or hostile files. Its message names the
// field (or file, tensor, argument) and the offending value.
#pragma once

#include <stdexcept>
#include <string>

namespace ffn {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ffn
