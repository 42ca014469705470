// Types and ranges: integers written as 5e8, fractional integers, booleans, strings, ranges, and
// "auto" where the table has no row. Every message names the path, the value and what was expected.
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("integers may be written in exponent form") {
  auto c = resolve(with({{"zero_optimization", {{"reduce_bucket_size", 5e8}, {"allgather_bucket_size", 2e8}}},
                         {"steps_per_print", 2e3}}));
  CHECK(c.zero.reduce_bucket_size == 500000000);
  CHECK(c.zero.allgather_bucket_size == 200000000);
  CHECK(c.steps_per_print == 2000);
  CHECK(resolve(with({{"zero_optimization", {{"stage", 2.0}}}})).zero.stage == 2);
}

TEST_CASE("a fractional value for an integer key is an error") {
  CHECK(error_of(with({{"zero_optimization", {{"stage", 1.5}}}})) ==
        "test.json: zero_optimization.stage: 1.5 is not an integer (expected an integer 0..3)");
  CHECK(error_of(with({{"zero_optimization", {{"reduce_bucket_size", 2.5e-1}}}})) ==
        "test.json: zero_optimization.reduce_bucket_size: 0.25 is not an integer (expected an integer >= 1)");
  CHECK(error_of(with({{"training", {{"steps", 10.5}}}})) ==
        "test.json: training.steps: 10.5 is not an integer (expected an integer >= 1)");
}

TEST_CASE("wrong JSON types are errors") {
  CHECK(error_of(with({{"zero_optimization", {{"reduce_bucket_size", "5e8"}}}})) ==
        "test.json: zero_optimization.reduce_bucket_size: \"5e8\" is not a number (expected an integer >= 1)");
  CHECK(error_of(with({{"zero_optimization", {{"overlap_comm", 1}}}})) ==
        "test.json: zero_optimization.overlap_comm: 1 is not a boolean (expected true or false)");
  CHECK(error_of(with({{"fp16", {{"enabled", "yes"}}}})) ==
        "test.json: fp16.enabled: \"yes\" is not a boolean (expected true, false or \"auto\")");
  CHECK(error_of(with({{"gradient_clipping", "1.0"}})) ==
        "test.json: gradient_clipping: \"1.0\" is not a number (expected a number >= 0)");
  CHECK(error_of(with({{"training", {{"checkpoint_dir", 5}}}})) ==
        "test.json: training.checkpoint_dir: 5 is not a string (expected a string)");
  CHECK(error_of(with({{"zero_optimization", json::array({1})}})) ==
        "test.json: zero_optimization: [1] is not an object (expected a JSON object {...})");
  CHECK(error_of(json::array()).rfind("test.json: [] is not a JSON object", 0) == 0);
}

TEST_CASE("ranges are checked") {
  CHECK(error_of(with({{"zero_optimization", {{"stage", 4}}}})) ==
        "test.json: zero_optimization.stage: 4 is out of range (expected 0..3)");
  CHECK(error_of(with({{"zero_optimization", {{"stage", -1}}}})) ==
        "test.json: zero_optimization.stage: -1 is out of range (expected 0..3)");
  CHECK(error_of(with({{"zero_optimization", {{"reduce_bucket_size", 0}}}})) ==
        "test.json: zero_optimization.reduce_bucket_size: 0 is out of range (expected >= 1)");
  CHECK(error_of(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"betas", {0.9, 1.0}}}}}}})) ==
        "test.json: optimizer.params.betas[1]: 1 is out of range (expected in [0, 1))");
  CHECK(error_of(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"betas", {0.9}}}}}}})) ==
        "test.json: optimizer.params.betas: [0.9] is not valid (expected two numbers in [0, 1), e.g. [0.9, 0.999])");
  CHECK(error_of(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 0}}}}}})) ==
        "test.json: optimizer.params.lr: 0 is out of range (expected > 0)");
  CHECK(error_of(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"weight_decay", -0.1}}}}}})) ==
        "test.json: optimizer.params.weight_decay: -0.1 is out of range (expected >= 0)");
  CHECK(error_of(with({{"gradient_clipping", -1}})) ==
        "test.json: gradient_clipping: -1 is out of range (expected >= 0)");
  CHECK(error_of(with({{"fp16", {{"hysteresis", 0}}}})) ==
        "test.json: fp16.hysteresis: 0 is out of range (expected 1..1073741824)");
  CHECK(error_of(with({{"fp16", {{"min_loss_scale", 0}}}})) ==
        "test.json: fp16.min_loss_scale: 0 is out of range (expected > 0)");
  CHECK(error_of(with({{"zero_optimization", {{"stage", 3}, {"offload_optimizer", {{"ratio", 1.5}}}}}})) ==
        "test.json: zero_optimization.offload_optimizer.ratio: 1.5 is out of range (expected in (0, 1])");
  CHECK(error_of(with({{"training", {{"micro_batch_size", 0}}}})) ==
        "test.json: training.micro_batch_size: 0 is out of range (expected 1..2147483647)");
  CHECK(error_of(with({{"training", {{"comm_timeout", -1}}}})) ==
        "test.json: training.comm_timeout: -1 is out of range (expected >= 0)");
  CHECK(error_of(with({{"data", {{"seq_len", 0}}}})) == "test.json: data.seq_len: 0 is out of range (expected >= 1)");
  CHECK(error_of(with({{"train_micro_batch_size_per_gpu", 0}})) ==
        "test.json: train_micro_batch_size_per_gpu: 0 is out of range (expected 1..2147483647)");
  CHECK(error_of(with({{"zero_optimization", {{"stage", 1e30}}}})) ==
        "test.json: zero_optimization.stage: 1e+30 is out of range (expected 0..3)");
}

TEST_CASE("string choices are checked and named") {
  CHECK(error_of(with({{"data", {{"format", "csv"}}}})) ==
        "test.json: data.format: \"csv\" is not valid (expected auto, llmc, uint16, text or synthetic)");
  CHECK(error_of(with({{"zero_optimization", {{"stage", 3}, {"offload_param", {{"device", "gpu"}}}}}})) ==
        "test.json: zero_optimization.offload_param.device: \"gpu\" is not valid (expected none, cpu or nvme)");
  CHECK(error_of(with({{"communication_data_type", "int8"}})) ==
        "test.json: communication_data_type: \"int8\" is not valid (expected fp32, fp16 or bf16)");
  CHECK(error_of(with({{"checkpoint", {{"tag_validation", "maybe"}}}})) ==
        "test.json: checkpoint.tag_validation: \"maybe\" is not valid (expected Warn, Ignore or Fail)");
  CHECK(resolve(with({{"checkpoint", {{"tag_validation", "FAIL"}}}})).checkpoint.tag_validation == "Fail");
}

TEST_CASE("\"auto\" outside the table is an error naming the key") {
  CHECK(error_of(with({{"zero_optimization", {{"stage", "auto"}}}})) ==
        "test.json: zero_optimization.stage: \"auto\" cannot be resolved for this key (expected an integer 0..3)");
  CHECK(error_of(with({{"zero_optimization", {{"allgather_bucket_size", "auto"}}}})).find(
            "zero_optimization.allgather_bucket_size: \"auto\" cannot be resolved") != std::string::npos);
  CHECK(error_of(with({{"fp16", {{"loss_scale", "auto"}}}})).find("fp16.loss_scale: \"auto\" cannot be resolved") !=
        std::string::npos);
  CHECK(error_of(with({{"zero_optimization", {{"overlap_comm", "auto"}}}})).find(
            "zero_optimization.overlap_comm: \"auto\" cannot be resolved") != std::string::npos);
  CHECK(error_of(with({{"training", {{"steps", "auto"}}}})).find("training.steps: \"auto\" cannot be resolved") !=
        std::string::npos);
  CHECK(error_of(
            with({{"scheduler", {{"type", "OneCycle"}, {"params", {{"cycle_min_lr", "auto"}, {"cycle_max_lr", 1}}}}}}))
            .find("scheduler.params.cycle_min_lr: \"auto\" cannot be resolved") != std::string::npos);
}

TEST_CASE("a key kept in an int is checked before it is narrowed") {
  // 2^31 would wrap to -2147483648, below max_seq_len, and pass.
  CHECK(error_of(with({{"data", {{"seq_len", 2147483648LL}}}})) ==
        "test.json: data.seq_len: 2147483648 exceeds model.max_seq_len 128 (expected <= 128)");
  CHECK(error_of(with({{"data", {{"seq_len", 4294967297LL}}}})) ==
        "test.json: data.seq_len: 4294967297 exceeds model.max_seq_len 128 (expected <= 128)");
  CHECK(error_of(with({{"model", {{"n_layer", 2147483648LL}}}})) ==
        "test.json: model.n_layer: 2147483648 is out of range (expected 1..1073741824)");
  CHECK(error_of(with({{"fp16", {{"enabled", true}, {"initial_scale_power", 4294967312LL}}}})) ==
        "test.json: fp16.initial_scale_power: 4294967312 is out of range (expected 0..127)");
}

TEST_CASE("a model shape too large for any machine is an error naming the model block") {
  CHECK(
      error_of(with({{"model", {{"d_model", 1 << 20}, {"n_layer", 100000}, {"n_head", 16}}}})) ==
      "test.json: model: n_layer 100000, d_model 1048576, vocab_size 256 and max_seq_len 128 make 1.32e+18 parameters "
      "(expected at most 1e+15)");
}

TEST_CASE("training.comm_timeout: 0 or a value beyond any run means no timeout") {
  CHECK(resolve(with({{"training", {{"comm_timeout", 0}}}})).training.comm_timeout == 0.0);
  CHECK(resolve(with({{"training", {{"comm_timeout", 1e10}}}})).training.comm_timeout == 1e10);
}
