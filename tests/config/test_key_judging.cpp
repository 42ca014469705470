// How keys are judged: strict blocks, unknown top-level keys, did-you-mean, keys that have no
// effect, and the DeepSpeed keys that must never be errors.
#include <fmt/format.h>

#include "config/edit_distance.hpp"
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("edit distance and closest match") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("reduce_bucket_sise", "reduce_bucket_size") == 1);
  CHECK(edit_distance("Stage", "stage") == 0);  // case-insensitive
  CHECK(closest_match("stgae", {"stage", "overlap_comm"}) == std::optional<std::string>("stage"));
  CHECK_FALSE(closest_match("completely_different", {"stage", "overlap_comm"}));
  // Two neighbouring characters swapped are one edit.
  CHECK(edit_distance("stgae", "stage") == 1);
  CHECK(edit_distance("zero_optimziation", "zero_optimization") == 1);
  CHECK(edit_distance("ab", "ba") == 1);
  CHECK(edit_distance("abc", "ca") == 3);  // optimal string alignment: no edit of a swapped pair
}

TEST_CASE("a near miss is within max(1, length / 8) edits") {
  CHECK(is_near_miss("zero_optimisation", "zero_optimization"));
  CHECK(is_near_miss("gradient_acumulation_steps", "gradient_accumulation_steps"));
  CHECK(is_near_miss("traning", "training"));
  CHECK(is_near_miss("Zero_Optimization", "zero_optimization"));
  CHECK(is_near_miss("schedular", "scheduler"));
  CHECK_FALSE(is_near_miss("fp8", "fp16"));                                 // 2 edits in 3 characters
  CHECK_FALSE(is_near_miss("zero_optimization_stage", "zero_optimization"));  // 6 edits
  CHECK_FALSE(is_near_miss("gradient_clip", "gradient_clipping"));           // 4 edits
}

TEST_CASE("an unknown key in a strict block is an error with a suggestion") {
  CHECK(error_of(with({{"zero_optimization", {{"reduce_bucket_sise", 5}}}})) ==
        "test.json: zero_optimization.reduce_bucket_sise: unknown key; did you mean reduce_bucket_size?");
}

TEST_CASE("every strict block rejects unknown keys and names the path") {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"zero_optimization", {{"stagee", 1}}}}, "zero_optimization.stagee: unknown key; did you mean stage?"},
      {{{"zero_optimization", {{"stage", 3}, {"offload_optimizer", {{"devise", "cpu"}}}}}},
       "zero_optimization.offload_optimizer.devise: unknown key; did you mean device?"},
      {{{"zero_optimization", {{"stage", 3}, {"offload_param", {{"max_in_cpus", 1}}}}}},
       "zero_optimization.offload_param.max_in_cpus: unknown key; did you mean max_in_cpu?"},
      {{{"fp16", {{"loss_scale_windw", 100}}}}, "fp16.loss_scale_windw: unknown key; did you mean loss_scale_window?"},
      {{{"bf16", {{"enable", true}}}}, "bf16.enable: unknown key; did you mean enabled?"},
      {{{"optimizer", {{"type", "AdamW"}, {"param", json::object()}}}},
       "optimizer.param: unknown key; did you mean params?"},
      {{{"optimizer", {{"type", "AdamW"}, {"params", {{"betas1", 0.9}}}}}},
       "optimizer.params.betas1: unknown key; did you mean betas?"},
      {{{"scheduler", {{"type", "WarmupLR"}, {"parms", json::object()}}}},
       "scheduler.parms: unknown key; did you mean params?"},
      {{{"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_num_step", 5}}}}}},
       "scheduler.params.warmup_num_step: unknown key; did you mean warmup_num_steps?"},
      {{{"csv_monitor", {{"output", "x"}}}}, "csv_monitor.output: unknown key"},
      {{{"tensorboard", {{"job_nam", "x"}}}}, "tensorboard.job_nam: unknown key; did you mean job_name?"},
      {{{"wandb", {{"projekt", "x"}}}}, "wandb.projekt: unknown key; did you mean project?"},
      {{{"comms_logger", {{"verbos", true}}}}, "comms_logger.verbos: unknown key; did you mean verbose?"},
      {{{"comms_logger", {{"prof_op", json::array()}}}}, "comms_logger.prof_op: unknown key; did you mean prof_ops?"},
      {{{"model", {{"n_layers", 2}}}}, "model.n_layers: unknown key; did you mean n_layer?"},
      {{{"data", {{"seqlen", 2}}}}, "data.seqlen: unknown key; did you mean seq_len?"},
      {{{"training", {{"step", 2}}}}, "training.step: unknown key; did you mean steps?"},
  };
  for (const auto& [extra, expected] : cases) {
    INFO(extra.dump());
    auto message = error_of(with(extra));
    CHECK(message.rfind("test.json: " + expected, 0) == 0);
  }
}

TEST_CASE("a near miss of a known key is an error at every level, the top level included") {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"zero_optimisation", {{"stage", 3}}}}, "zero_optimisation: unknown key; did you mean zero_optimization?"},
      {{{"zero_optimziation", {{"stage", 3}}}}, "zero_optimziation: unknown key; did you mean zero_optimization?"},
      {{{"Zero_Optimization", {{"stage", 3}}}}, "Zero_Optimization: unknown key; did you mean zero_optimization?"},
      {{{"gradient_acumulation_steps", 4}}, "gradient_acumulation_steps: unknown key; did you mean "
                                            "gradient_accumulation_steps?"},
      {{{"optimiser", {{"type", "AdamW"}}}}, "optimiser: unknown key; did you mean optimizer?"},
      {{{"schedular", {{"type", "WarmupLR"}}}}, "schedular: unknown key; did you mean scheduler?"},
      {{{"checkpoint", {{"tag_validaton", "Fail"}}}}, "checkpoint.tag_validaton: unknown key; did you mean "
                                                      "tag_validation?"},
      {{{"activation_checkpointing", {{"number_checkpoint", 2}}}},
       "activation_checkpointing.number_checkpoint: unknown key; did you mean number_checkpoints?"},
  };
  for (const auto& [extra, expected] : cases) {
    INFO(extra.dump());
    CHECK(error_of(with(extra)) == "test.json: " + expected);
  }
}

TEST_CASE("other unknown top-level keys are warnings (other tools' keys), then ignored") {
  CapturedLog log;
  auto c = resolve(with({{"seed", 3},
                         {"fp8", {{"enabled", true}}},
                         {"zero_optimization_stage", 3},
                         {"no_such_thing_at_all", 1},
                         {"checkpoint", {{"some_other_tools_setting", true}}}}));
  CHECK(c.zero.stage == 0);
  CHECK(log.count("test.json: seed: unknown key (ignored)") == 1);
  CHECK(log.count("test.json: fp8: unknown key; did you mean fp16? (ignored)") == 1);
  CHECK(log.count("test.json: zero_optimization_stage: unknown key; did you mean zero_optimization? (ignored)") == 1);
  CHECK(log.count("test.json: no_such_thing_at_all: unknown key (ignored)") == 1);
  CHECK(log.count("test.json: checkpoint.some_other_tools_setting: unknown key (ignored)") == 1);
}

TEST_CASE("every unknown key given with --set is an error") {
  auto sets = [](std::vector<std::string> overrides) {
    ResolveOptions o = world(1);
    o.overrides = std::move(overrides);
    return o;
  };
  CHECK(error_of(with({}), sets({"traning.steps=5"})) ==
        "--set traning.steps=5: traning: unknown key; did you mean training?");
  CHECK(error_of(with({}), sets({"seed=3"})) ==
        "--set seed=3: seed: unknown key (not a key zerotrain or DeepSpeed knows; docs/config.md lists them)");
  CHECK(error_of(with({}), sets({"checkpoint.some_other_tools_setting=true"})) ==
        "--set checkpoint.some_other_tools_setting=true: checkpoint.some_other_tools_setting: unknown key (not a key "
        "zerotrain or DeepSpeed knows; docs/config.md lists them)");
  // The same key in the file is another tool's and stays a warning.
  CapturedLog log;
  CHECK_NOTHROW(resolve(with({{"seed", 3}}), sets({"training.seed=3"})));
  CHECK(log.count("test.json: seed: unknown key (ignored)") == 1);
}

TEST_CASE("lenient blocks (checkpoint, activation_checkpointing) load unknown keys far from their own") {
  CapturedLog log;
  auto c = resolve(with({{"checkpoint", {{"tag_validation", "Fail"}, {"async_save", true}}},
                         {"activation_checkpointing", {{"number_checkpoints", 2}, {"synchronize", false}}}}));
  CHECK(c.checkpoint.tag_validation == "Fail");
  CHECK(c.activation_checkpointing.number_checkpoints == 2);
  CHECK(log.count("checkpoint.async_save: unknown key (ignored)") == 1);
  CHECK(log.count("activation_checkpointing.synchronize: unknown key") == 1);
}

TEST_CASE("comms_logger is a monitor block: unknown keys are errors, its own keys load") {
  CHECK(error_of(with({{"comms_logger", {{"enabled", true}, {"verbos", true}}}})) ==
        "test.json: comms_logger.verbos: unknown key; did you mean verbose?");
  CHECK(error_of(with({{"comms_logger", {{"no_such_setting", 1}}}})).rfind("test.json: comms_logger.no_such_setting: "
                                                                          "unknown key (expected one of ", 0) == 0);
  auto c = resolve(with({{"comms_logger", {{"enabled", true}, {"verbose", false}, {"prof_all", false},
                                           {"prof_ops", {"all_reduce"}}, {"debug", false}}}}));
  CHECK(c.comms_logger.enabled);
  CHECK(c.comms_logger.prof_ops == std::vector<std::string>{"all_reduce"});
}

TEST_CASE("comms_logger.prof_ops: DeepSpeed's op names map to zerotrain's collectives; an unknown name is an error") {
  auto c = resolve(with(
      {{"comms_logger",
        {{"prof_all", false},
         {"prof_ops",
          {"reduce_scatter_tensor", "all_gather_into_tensor", "all_gather", "broadcast", "barrier", "all_reduce"}}}}}));
  CHECK(c.comms_logger.prof_ops ==
        std::vector<std::string>{"reduce_scatter", "all_gather", "broadcast", "barrier", "all_reduce"});

  CHECK(error_of(with({{"comms_logger", {{"prof_ops", {"all_reduce", "all_gathr"}}}}})) ==
        "test.json: comms_logger.prof_ops[1]: \"all_gathr\" is not a collective; did you mean all_gather? (expected "
        "all_reduce, reduce_scatter, all_gather, broadcast, barrier or all_to_all, or a DeepSpeed name such as "
        "reduce_scatter_tensor or all_gather_into_tensor)");
  CHECK(error_of(with({{"comms_logger", {{"prof_ops", {"alltoall_everything"}}}}}))
            .rfind("test.json: comms_logger.prof_ops[0]: \"alltoall_everything\" is not a collective (expected ", 0) ==
        0);

  // An op DeepSpeed profiles that zerotrain never issues: the config still loads, with a warning.
  CapturedLog log;
  c = resolve(with({{"comms_logger", {{"prof_ops", {"all_reduce", "isend", "all_to_all_single"}}}}}));
  CHECK(c.comms_logger.prof_ops == std::vector<std::string>{"all_reduce", "all_to_all"});  // expert parallelism's
  CHECK(log.count("comms_logger.prof_ops[1]: \"isend\" has no effect (zerotrain never issues that op)") == 1);
}

TEST_CASE("tensorboard enabled is quiet; wandb enabled warns, pointing to what works") {
  CapturedLog log;
  auto c = resolve(with({{"tensorboard", {{"enabled", true}, {"output_path", "tb"}, {"job_name", "j"}}},
                         {"wandb", {{"enabled", true}}}}));
  CHECK(c.tensorboard.enabled);
  CHECK(c.tensorboard.output_path == "tb");
  CHECK(c.tensorboard.job_name == "j");
  CHECK(log.count("tensorboard.") == 0);  // no warning about the tensorboard block
  CHECK(log.count("wandb.enabled: true has no effect (zerotrain runs offline and does not log to Weights & Biases; "
                  "use csv_monitor, tensorboard or training.metrics)") == 1);
  CapturedLog quiet;
  resolve(with({{"tensorboard", {{"enabled", true}}}, {"csv_monitor", {{"enabled", true}}}}));
  CHECK(quiet.warnings().empty());
}

TEST_CASE("known but unimplemented keys: one warning when not the default, none otherwise") {
  const std::vector<std::pair<json, std::string>> non_default = {
      {{{"zero_optimization", {{"stage", 3}, {"zero_quantized_weights", true}}}},
       "zero_optimization.zero_quantized_weights"},
      {{{"zero_optimization", {{"stage", 3}, {"zero_quantized_gradients", true}}}},
       "zero_optimization.zero_quantized_gradients"},
      {{{"zero_optimization", {{"stage", 3}, {"zero_hpz_partition_size", 8}}}},
       "zero_optimization.zero_hpz_partition_size"},
      {{{"zero_optimization", {{"stage", 2}, {"round_robin_gradients", true}}}},
       "zero_optimization.round_robin_gradients"},
      {{{"zero_optimization", {{"stage", 3}, {"sub_group_size", 1e14}}}}, "zero_optimization.sub_group_size"},
      {{{"zero_optimization", {{"stage", 2}, {"elastic_checkpoint", true}}}}, "zero_optimization.elastic_checkpoint"},
      {{{"compile", {{"deepcompile", true}}}}, "compile"},
      {{{"tensor_parallel", {{"autotp_size", 2}}}}, "tensor_parallel"},
      {{{"flops_profiler", {{"enabled", true}}}}, "flops_profiler"},
      {{{"fp16", {{"auto_cast", true}}}}, "fp16.auto_cast"},
      {{{"optimizer", {{"type", "AdamW"}, {"params", {{"amsgrad", true}}}}}}, "optimizer.params.amsgrad"},
  };
  for (const auto& [extra, key] : non_default) {
    INFO(extra.dump());
    CapturedLog log;
    REQUIRE_NOTHROW(resolve(with(extra)));
    CHECK(log.count("test.json: " + key + ": ") == 1);
    CHECK(log.count("has no effect") == 1);
  }
  CapturedLog log;
  resolve(with({{"zero_optimization",
                 {{"stage", 3}, {"zero_quantized_weights", false}, {"zero_hpz_partition_size", 1},
                  {"allgather_partitions", true}, {"sub_group_size", 1e9}, {"round_robin_gradients", false}}},
                {"compile", json::object()},
                {"flops_profiler", {{"enabled", false}, {"profile_step", 1}}}}));
  CHECK(log.warnings().empty());
}

TEST_CASE("known but unimplemented keys are still typed, and \"auto\" is not theirs") {
  CHECK(error_of(with({{"zero_optimization", {{"round_robin_gradients", "auto"}}}})) ==
        "test.json: zero_optimization.round_robin_gradients: \"auto\" cannot be resolved for this key (expected a "
        "boolean)");
  CHECK(error_of(with({{"zero_optimization", {{"round_robin_gradients", 5}}}})) ==
        "test.json: zero_optimization.round_robin_gradients: 5 is not a boolean (expected a boolean such as the "
        "default false)");
  CHECK(error_of(with({{"zero_optimization", {{"stage", 3}, {"zero_hpz_partition_size", "4"}}}})) ==
        "test.json: zero_optimization.zero_hpz_partition_size: \"4\" is not a number (expected a number such as the "
        "default 1)");
}

TEST_CASE("top-level keys DeepSpeed knows but zerotrain ignores are never errors") {
  CapturedLog log;
  REQUIRE_NOTHROW(resolve(with({{"flops_profiler", {{"enabled", false}}},
                                {"data_efficiency", {{"enabled", false}}},
                                {"zero_allow_untested_optimizer", true},
                                {"zero_force_ds_cpu_optimizer", false},
                                {"memory_breakdown", false},
                                {"disable_python_gc", true},
                                {"data_types", {{"keep_in_fp32_modules", json::array()}}},
                                {"aio", json::object()}})));
  CHECK(log.warnings().empty());
  auto c = resolve(with({{"zero_allow_untested_optimizer", true}, {"zero_force_ds_cpu_optimizer", false}}));
  CHECK(c.zero_allow_untested_optimizer);
  CHECK_FALSE(c.zero_force_ds_cpu_optimizer);
  CHECK(error_of(with({{"flops_profiler", true}})) ==
        "test.json: flops_profiler: true is not an object (expected a JSON object {...})");
}

TEST_CASE("the keys DeepSpeed 0.19.8 removed are refused, one line each, unless they ask for nothing") {
  const std::vector<std::pair<json, std::string>> in_use = {
      {{{"nebula", {{"enabled", true}}}}, "nebula"},
      {{{"compression_training", {{"weight_quantization", {{"shared_parameters", {{"enabled", true}}}}}}}},
       "compression_training"},
      {{{"amp", {{"enabled", true}, {"opt_level", "O1"}}}}, "amp"},
      {{{"amp", true}}, "amp"},
      {{{"quantize_training", {{"enabled", true}}}}, "quantize_training"},
      {{{"sparse_gradients", true}}, "sparse_gradients"},
      {{{"eigenvalue", {{"enabled", true}}}}, "eigenvalue"},
      {{{"sparse_attention", {{"mode", "fixed"}}}}, "sparse_attention"},
      {{{"elasticity", {{"enabled", true}, {"max_train_batch_size", 64}}}}, "elasticity"},
      {{{"graph_harvesting", true}}, "graph_harvesting"},
      {{{"curriculum_learning", {{"enabled", true}}}}, "curriculum_learning"},
      {{{"progressive_layer_drop", {{"enabled", true}}}}, "progressive_layer_drop"},
      {{{"zero_optimization", {{"stage", 3}, {"mics_shard_size", 4}}}}, "zero_optimization.mics_shard_size"},
      {{{"zero_optimization", {{"stage", 3}, {"mics_hierarchical_params_gather", true}}}},
       "zero_optimization.mics_hierarchical_params_gather"},
      {{{"zero_optimization", {{"stage", 3}, {"zeropp_loco_param", {{"err_beta", 0.8}}}}}},
       "zero_optimization.zeropp_loco_param"},
  };
  for (const auto& [extra, key] : in_use) {
    INFO(extra.dump());
    const std::string error = error_of(with(extra));
    CHECK(error.rfind("test.json: " + key + ": removed in DeepSpeed 0.19.8, which refuses it (", 0) == 0);
    CHECK(error.find('\n') == std::string::npos);
  }
  CHECK(error_of(with({{"amp", {{"enabled", true}}}})) ==
        "test.json: amp: removed in DeepSpeed 0.19.8, which refuses it (NVIDIA Apex AMP; use bf16 or fp16); delete it");

  // What configs written for older DeepSpeed carry switched off still loads, with one warning each.
  CapturedLog log;
  REQUIRE_NOTHROW(resolve(with({{"amp", {{"enabled", false}}},
                                {"elasticity", {{"enabled", false}, {"max_train_batch_size", 64}}},
                                {"sparse_attention", json::object()},
                                {"sparse_gradients", false},
                                {"graph_harvesting", false},
                                {"zero_optimization", {{"stage", 3}, {"mics_shard_size", -1}}}})));
  CHECK(log.count("removed this key") == 6);
  CHECK(log.count("test.json: amp: {\"enabled\":false} asks for nothing, but DeepSpeed 0.19.8 removed this key "
                  "(NVIDIA Apex AMP; use bf16 or fp16) and refuses it; ignored (delete it)") == 1);
  CHECK(log.count("test.json: zero_optimization.mics_shard_size: -1 asks for nothing") == 1);

  // Every removed key at its disabled default: one warning naming it, nothing refused.
  const std::vector<std::pair<json, std::string>> switched_off = {
      {{{"nebula", {{"enabled", false}}}}, "nebula"},
      {{{"compression_training", json::object()}}, "compression_training"},
      {{{"amp", {{"enabled", false}}}}, "amp"},
      {{{"quantize_training", {{"enabled", false}}}}, "quantize_training"},
      {{{"sparse_gradients", false}}, "sparse_gradients"},
      {{{"eigenvalue", {{"enabled", false}}}}, "eigenvalue"},
      {{{"sparse_attention", json::object()}}, "sparse_attention"},
      {{{"elasticity", {{"enabled", false}}}}, "elasticity"},
      {{{"graph_harvesting", false}}, "graph_harvesting"},
      {{{"curriculum_learning", {{"enabled", false}}}}, "curriculum_learning"},
      {{{"progressive_layer_drop", {{"enabled", false}}}}, "progressive_layer_drop"},
      {{{"zero_optimization", {{"stage", 3}, {"mics_shard_size", -1}}}}, "zero_optimization.mics_shard_size"},
      {{{"zero_optimization", {{"stage", 3}, {"mics_hierarchical_params_gather", false}}}},
       "zero_optimization.mics_hierarchical_params_gather"},
      {{{"zero_optimization", {{"stage", 3}, {"zeropp_loco_param", json::object()}}}},
       "zero_optimization.zeropp_loco_param"},
  };
  for (const auto& [extra, key] : switched_off) {
    INFO(extra.dump());
    CapturedLog one;
    REQUIRE_NOTHROW(resolve(with(extra)));
    CHECK(one.count("removed this key") == 1);
    CHECK(one.count("test.json: " + key + ": ") == 1);
  }
}

TEST_CASE("DeepSpeed 0.19.8's new keys: parameter_alignment, disable_python_gc, data_types.keep_in_fp32_modules") {
  CapturedLog log;
  REQUIRE_NOTHROW(resolve(with({{"disable_python_gc", true},
                                {"data_types", {{"keep_in_fp32_modules", "auto"}}},
                                {"zero_optimization", {{"stage", 2}, {"parameter_alignment", 64}}}})));
  CHECK(log.warnings().empty());
  // "auto": the family's routers; none in a dense model. Patterns are training.freeze's, and each
  // must name some parameter.
  CHECK(resolve(with({{"data_types", {{"keep_in_fp32_modules", "auto"}}}})).keep_in_fp32_modules.empty());
  const json moe = {{"model", {{"preset", "qwen3-moe-tiny"}}}};
  json auto_moe = moe;
  auto_moe["data_types"] = {{"keep_in_fp32_modules", "auto"}};
  CHECK(resolve(with(auto_moe)).keep_in_fp32_modules == std::vector<std::string>{"model.layers.*.mlp.gate"});
  json listed = moe;
  listed["data_types"] = {{"keep_in_fp32_modules", {"model.layers.0.mlp.gate", "model.norm"}}};
  CHECK(resolve(with(listed)).keep_in_fp32_modules ==
        std::vector<std::string>{"model.layers.0.mlp.gate", "model.norm"});
  CHECK(log.warnings().empty());
  CHECK(error_of(with({{"data_types", {{"keep_in_fp32_modules", {"h.0", "router"}}}}})) ==
        "test.json: data_types.keep_in_fp32_modules[1]: \"router\" matches no parameter (the names are Hugging "
        "Face's, such as wte.weight, h.0.ln_1.weight)");
  CHECK(error_of(with({{"data_types", {{"keep_in_fp32_modules", 3}}}})) ==
        "test.json: data_types.keep_in_fp32_modules: 3 is not a list (expected \"auto\" or a list of name patterns)");
  CHECK(error_of(with({{"zero_optimization", {{"parameter_alignment", 0}}}})) ==
        "test.json: zero_optimization.parameter_alignment: 0 is out of range (expected >= 1)");
  CHECK(error_of(with({{"disable_python_gc", "yes"}})) ==
        "test.json: disable_python_gc: \"yes\" is not a boolean (expected true or false)");
  CHECK(error_of(with({{"zero_optimization", {{"stage", 2}, {"reduce_bucket_size", 0}}}})) ==
        "test.json: zero_optimization.reduce_bucket_size: 0 is out of range (expected >= 1)");
}

TEST_CASE("zero_optimization.compute_grad_norm false: stages 1 and 2, no optimizer offload, no clipping asked for") {
  CHECK(resolve(with({})).zero.compute_grad_norm);
  for (int stage : {1, 2}) {
    auto c = resolve(with({{"zero_optimization", {{"stage", stage}, {"compute_grad_norm", false}}}}));
    CHECK_FALSE(c.zero.compute_grad_norm);
    CHECK(c.gradient_clipping == 0);  // the default's clipping turned off
    c = resolve(with(
        {{"gradient_clipping", "auto"}, {"zero_optimization", {{"stage", stage}, {"compute_grad_norm", false}}}}));
    CHECK(c.gradient_clipping == 0);
  }
  for (int stage : {0, 3})
    CHECK(error_of(with({{"zero_optimization", {{"stage", stage}, {"compute_grad_norm", false}}}})) ==
          fmt::format("test.json: zero_optimization.compute_grad_norm: false needs ZeRO stage 1 or 2, as in DeepSpeed "
                      "(stage is {})", stage));
  CHECK(error_of(with({{"zero_optimization",
                        {{"stage", 2}, {"compute_grad_norm", false}, {"offload_optimizer", {{"device", "cpu"}}}}}})) ==
        "test.json: zero_optimization.compute_grad_norm: false cannot be used with offload_optimizer.device \"cpu\", "
        "as in DeepSpeed");
  CHECK(error_of(with(
            {{"gradient_clipping", 1.0}, {"zero_optimization", {{"stage", 2}, {"compute_grad_norm", false}}}})) ==
        "test.json: gradient_clipping: 1 asks for clipping, which needs the gradient norm that "
        "zero_optimization.compute_grad_norm false turns off (set it to 0)");
  CHECK(resolve(with({{"gradient_clipping", 0}, {"zero_optimization", {{"stage", 1}, {"compute_grad_norm", false}}}}))
            .gradient_clipping == 0);
}

TEST_CASE("wandb is accepted and warned about when enabled") {
  CapturedLog log;
  auto c = resolve(with({{"wandb", {{"enabled", true}, {"project", "p"}, {"team", "t"}, {"group", "g"}}}}));
  CHECK(c.wandb.enabled);
  CHECK(log.count("wandb.enabled: true has no effect") == 1);
}
