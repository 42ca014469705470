// The toy model on the shipped corpus, one process: the loss falls well below the unigram
// entropy of the text (what a model that ignores context can reach).
#include <catch2/catch.hpp>

#include <array>
#include <cmath>

#include "run_helpers.hpp"

using namespace zt::test;

static double unigram_entropy_nats(const std::string& path) {
  std::string text = read_file(path);
  std::array<double, 256> count{};
  for (unsigned char c : text) count[c] += 1;
  double h = 0;
  for (double c : count)
    if (c > 0) h -= c / double(text.size()) * std::log(c / double(text.size()));
  return h;
}

TEST_CASE("the toy model learns the shipped corpus beyond unigram statistics", "[e2e][convergence]") {
  double entropy = unigram_entropy_nats(std::string(ZT_SOURCE_DIR) + "/data/tinytext/train.txt");
  auto dir = fresh_dir("convergence");
  std::string cmd = std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 300 --set training.lr=3e-3" +
                    " --set training.warmup_steps=20 --set training.micro_batch_size=8 --set data.seq_len=64" +
                    " --set training.eval_interval=300 --set training.eval_batches=8 --set training.metrics=" + dir +
                    "/metrics.jsonl";
  int code = run_command(cmd, dir + "/out.log");
  INFO(read_file(dir + "/out.log"));
  REQUIRE(code == 0);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.evals.size() == 1);
  double val = m.evals[0]["val_loss"].get<double>();
  INFO("unigram entropy " << entropy << " nats, val loss " << val);
  CHECK(m.steps.front()["loss"].get<double>() > entropy);
  CHECK(val < entropy - 0.6);
}
