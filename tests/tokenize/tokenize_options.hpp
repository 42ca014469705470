#pragma once
// The options of a quiet `zerotrain tokenize` run on two threads, for the tests.
#include <string>
#include <vector>

#include "tokenize/tokenize_files.hpp"

namespace zt::test {

inline TokenizeOptions options_for(const std::string& tokenizer, std::vector<std::string> inputs,
                                   const std::string& output) {
  TokenizeOptions o;
  o.tokenizer = tokenizer;
  o.inputs = std::move(inputs);
  o.output = output;
  o.threads = 2;
  o.quiet = true;
  return o;
}

}  // namespace zt::test
