#pragma once
// The data and length of the tests' short runs: the shipped corpus (data/tinytext) in windows of
// `seq_len` tokens read in file order, three steps from seed 42, no evaluation between steps.
#include <string>

#include "config/config.hpp"

namespace zt::test {

inline void short_tinytext_run(config::Config& c, int seq_len) {
  c.data.train = {std::string(ZT_SOURCE_DIR) + "/data/tinytext/train.txt"};
  c.data.format = "text";
  c.data.seq_len = seq_len;
  c.data.shuffle = false;
  c.training.steps = 3;
  c.training.seed = 42;
  c.training.eval_interval = 0;
}

}  // namespace zt::test
