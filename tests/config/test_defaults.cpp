// Every block's defaults (docs/config.md, each block's table), checked against the values written
// there rather than against the struct initialisers.
#include <filesystem>

#include "config_test_support.hpp"
#include "model/gpt_shape.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("top-level defaults") {
  auto c = resolve({{"train_micro_batch_size_per_gpu", 2}});
  CHECK(c.gradient_clipping == 1.0);
  CHECK(c.steps_per_print == 10);
  CHECK_FALSE(c.wall_clock_breakdown);
  CHECK_FALSE(c.prescale_gradients);
  CHECK(c.gradient_predivide_factor == 1.0);
  CHECK(c.communication_data_type == "fp32");  // the training dtype
  CHECK_FALSE(c.zero_allow_untested_optimizer);
  CHECK(c.zero_force_ds_cpu_optimizer);
  CHECK_FALSE(c.dump_state);
  CHECK(c.scheduler.type == "linear");  // no scheduler block: the Hugging Face Trainer's schedule
}

TEST_CASE("steps_per_print null means never (0)") {
  CHECK(resolve({{"train_micro_batch_size_per_gpu", 2}, {"steps_per_print", nullptr}}).steps_per_print == 0);
}

TEST_CASE("communication_data_type defaults to the training dtype") {
  CHECK(resolve(with({{"bf16", {{"enabled", true}}}})).communication_data_type == "bf16");
  CHECK(resolve(with({{"fp16", {{"enabled", true}}}})).communication_data_type == "fp16");
  CHECK(resolve(with({{"bf16", {{"enabled", true}}}, {"communication_data_type", "fp32"}})).communication_data_type ==
        "fp32");
}

TEST_CASE("zero_optimization defaults") {
  auto z = resolve(with({})).zero;
  CHECK(z.stage == 0);
  CHECK(z.contiguous_gradients);
  CHECK(z.reduce_scatter);
  CHECK(z.reduce_bucket_size == 500000000);
  CHECK(z.allgather_bucket_size == 500000000);
  CHECK_FALSE(z.overlap_comm);
  CHECK(z.load_from_fp32_weights);
  CHECK(z.stage3_prefetch_bucket_size == 50000000);
  CHECK(z.stage3_param_persistence_threshold == 100000);
  CHECK(z.stage3_max_live_parameters == 1000000000);
  CHECK(z.stage3_max_reuse_distance == 1000000000);
  CHECK_FALSE(z.stage3_gather_16bit_weights_on_model_save);
  CHECK(z.sub_group_size == 1000000000);
  CHECK(z.ignore_unused_parameters);
  const auto& oo = z.offload_optimizer;
  CHECK(oo.device == zt::OffloadDevice::None);
  CHECK(oo.nvme_path.empty());
  CHECK(oo.pin_memory);
  CHECK(oo.buffer_count == 4);
  CHECK_FALSE(oo.fast_init);
  CHECK(oo.ratio == 1.0);
  const auto& op = z.offload_param;
  CHECK(op.device == zt::OffloadDevice::None);
  CHECK(op.pin_memory);
  CHECK(op.buffer_count == 5);
  CHECK(op.buffer_size == 100000000);
  CHECK(op.max_in_cpu == 1000000000);
}

TEST_CASE("overlap_comm defaults to true for stage 3 only") {
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("stage " << stage);
    CHECK(resolve(with({{"zero_optimization", {{"stage", stage}}}})).zero.overlap_comm == (stage == 3));
  }
  CHECK_FALSE(resolve(with({{"zero_optimization", {{"stage", 3}, {"overlap_comm", false}}}})).zero.overlap_comm);
  CHECK(resolve(with({{"zero_optimization", {{"stage", 1}, {"overlap_comm", true}}}})).zero.overlap_comm);
}

TEST_CASE("fp16 and bf16 defaults") {
  auto c = resolve(with({}));
  CHECK_FALSE(c.fp16.enabled);
  CHECK(c.fp16.loss_scale == 0.0);
  CHECK(c.fp16.initial_scale_power == 16);
  CHECK(c.fp16.loss_scale_window == 1000);
  CHECK(c.fp16.hysteresis == 2);
  CHECK_FALSE(c.fp16.consecutive_hysteresis);
  CHECK(c.fp16.min_loss_scale == 1.0);
  CHECK_FALSE(c.bf16.enabled);
  CHECK(c.bf16.check_grad_overflow);
  CHECK(c.dtype() == "fp32");
}

TEST_CASE("optimizer defaults: the same with or without a block, and a word where DeepSpeed's differ") {
  CapturedLog log;
  auto none = resolve(with({{"training", {{"lr", 6e-4}, {"adam_beta2", 0.95}, {"weight_decay", 0.1}}}})).optimizer;
  CHECK(none.type == "AdamW");
  CHECK(none.lr == 6e-4);
  CHECK(none.beta1 == 0.9);
  CHECK(none.beta2 == 0.95);
  CHECK(none.eps == 1e-8);
  CHECK(none.weight_decay == 0.1);
  CHECK(none.bias_correction);
  CHECK(none.adam_w_mode);
  CHECK(log.warnings().empty());

  for (const json& block : {json{{"type", "AdamW"}}, json{{"type", "AdamW"}, {"params", json::object()}}}) {
    INFO(block.dump());
    CapturedLog warned;
    auto given =
        resolve(with({{"optimizer", block}, {"training", {{"lr", 6e-4}, {"adam_beta2", 0.95}, {"weight_decay", 0.1}}}}))
            .optimizer;
    CHECK(given.type == "AdamW");
    CHECK(given.lr == none.lr);
    CHECK(given.beta1 == none.beta1);
    CHECK(given.beta2 == none.beta2);
    CHECK(given.eps == none.eps);
    CHECK(given.weight_decay == none.weight_decay);
    CHECK(given.bias_correction);
    CHECK(given.adam_w_mode);
    CHECK(warned.count("test.json: optimizer.params: not given: lr 0.0006 (training.lr), betas [0.9, 0.95] "
                       "(training.adam_beta1, adam_beta2), weight_decay 0.1 (training.weight_decay), as without an "
                       "optimizer block (DeepSpeed's defaults would be lr 0.001, betas [0.9, 0.999], weight_decay 0; "
                       "give them in the block to use those)") == 1);
  }
  // Only the parameters left out are named; none left out, nothing is said.
  CapturedLog some;
  auto adam = resolve(with({{"optimizer", {{"type", "Adam"}, {"params", {{"lr", 1e-3}, {"betas", {0.9, 0.999}}}}}},
                            {"training", {{"weight_decay", 0.1}}}}))
                  .optimizer;
  CHECK(adam.type == "Adam");
  CHECK(adam.lr == 1e-3);
  CHECK(adam.beta2 == 0.999);
  CHECK(adam.weight_decay == 0.1);
  CHECK(some.count("optimizer.params: not given: weight_decay 0.1 (training.weight_decay), as without an optimizer "
                   "block (DeepSpeed's defaults would be weight_decay 0;") == 1);
  CapturedLog quiet;
  resolve(with({{"optimizer",
                 {{"type", "AdamW"}, {"params", {{"lr", 1e-3}, {"betas", {0.9, 0.999}}, {"weight_decay", 0.0}}}}}}));
  CHECK(quiet.warnings().empty());
}

TEST_CASE("monitor, comms_logger, checkpoint and activation_checkpointing defaults") {
  auto c = resolve(with({}));
  for (const auto* m : {&c.csv_monitor, &c.tensorboard}) {
    CHECK_FALSE(m->enabled);
    CHECK(m->output_path.empty());
    CHECK(m->job_name == "DeepSpeedJobName");
  }
  CHECK_FALSE(c.wandb.enabled);
  CHECK_FALSE(c.comms_logger.enabled);
  CHECK_FALSE(c.comms_logger.verbose);
  CHECK(c.comms_logger.prof_all);
  CHECK(c.comms_logger.prof_ops.empty());
  CHECK(c.checkpoint.tag_validation == "Warn");
  CHECK_FALSE(c.checkpoint.load_universal);
  CHECK_FALSE(c.checkpoint.use_node_local_storage);
  CHECK_FALSE(c.activation_checkpointing.partition_activations);
  CHECK(c.activation_checkpointing.number_checkpoints == 0);
  CHECK_FALSE(c.activation_checkpointing.contiguous_memory_optimization);
  CHECK_FALSE(c.activation_checkpointing.cpu_checkpointing);
  CHECK_FALSE(c.activation_checkpointing.recompute());

  auto set = resolve(with({{"comms_logger", {{"enabled", true}, {"prof_all", false}, {"prof_ops", {"all_reduce"}}}},
                           {"activation_checkpointing", {{"number_checkpoints", 4}, {"cpu_checkpointing", true}}},
                           {"csv_monitor", {{"enabled", true}, {"output_path", "logs/"}, {"job_name", "run1"}}}}));
  CHECK(set.comms_logger.prof_ops == std::vector<std::string>{"all_reduce"});
  CHECK_FALSE(set.comms_logger.prof_all);
  CHECK(set.activation_checkpointing.recompute());
  CHECK(set.csv_monitor.job_name == "run1");
  CHECK(resolve(with({{"activation_checkpointing", {{"number_checkpoints", nullptr}}}})).activation_checkpointing
            .number_checkpoints == 0);
}

TEST_CASE("model, data and training defaults") {
  auto c = resolve(with({}));
  auto toy = *zt::gpt_preset("toy");
  CHECK(c.model.preset == "toy");
  CHECK(c.model.shape.n_layer == toy.n_layer);
  CHECK(c.model.shape.n_head == toy.n_head);
  CHECK(c.model.shape.d_model == toy.d_model);
  CHECK(c.model.shape.vocab_size == toy.vocab_size);
  CHECK(c.model.shape.max_seq_len == toy.max_seq_len);

  CHECK(c.data.format == "auto");
  CHECK(c.data.seq_len == toy.max_seq_len);
  CHECK(c.data.shuffle);
  REQUIRE(c.data.train.size() == 1);
  REQUIRE(c.data.val.size() == 1);
  CHECK(std::filesystem::path(c.data.train[0]) == std::filesystem::path(ZT_SOURCE_DIR) / "data/tinytext/train.txt");
  CHECK(std::filesystem::path(c.data.val[0]) == std::filesystem::path(ZT_SOURCE_DIR) / "data/tinytext/val.txt");
  CHECK(std::filesystem::is_regular_file(c.data.train[0]));  // the shipped corpus exists

  const auto& t = c.training;
  CHECK(t.steps == 100);
  CHECK(t.epochs == 0);
  CHECK(t.micro_batch_size == 4);
  CHECK(t.gradient_accumulation_steps == 1);
  CHECK(t.lr == 5e-5);
  CHECK(t.adam_beta1 == 0.9);
  CHECK(t.adam_beta2 == 0.999);
  CHECK(t.adam_epsilon == 1e-8);
  CHECK(t.weight_decay == 0.0);
  CHECK(t.logging_steps == 10);
  CHECK_FALSE(t.gradient_checkpointing);
  CHECK(t.warmup_steps == 0);
  CHECK(t.warmup_ratio == 0.0);
  CHECK(t.lr_scheduler_type == "linear");
  CHECK(t.max_grad_norm == 1.0);
  CHECK(t.seed == 1234);
  CHECK(t.eval_interval == 100);
  CHECK(t.eval_batches == 0);  // all of data.val
  CHECK(t.save_interval == 0);
  CHECK(t.keep_last == 0);
  CHECK(t.checkpoint_dir.empty());
  CHECK(t.resume.name() == "none");
  CHECK(t.init_from == "random");  // without model.path
  CHECK(t.save_final.empty());
  CHECK(t.save_dtype == zt::DType::F32);
  CHECK(t.log_dir.empty());
  CHECK(t.metrics.empty());
  CHECK(t.comm_timeout == 600.0);
}

TEST_CASE("training block rules") {
  CHECK(error_of(with({{"training", {{"steps", 0}}}})) ==
        "test.json: training.steps: 0 is out of range (expected >= 1)");
  CHECK(resolve(with({{"training", {{"steps", 7}}}})).training.steps == 7);
  CHECK(error_of(with({{"training", {{"resume", "latest"}}}})).find("training.resume: \"latest\" needs "
                                                                    "training.checkpoint_dir") != std::string::npos);
  CHECK(error_of(with({{"training", {{"save_interval", 50}}}})).find("training.save_interval: 50 needs") !=
        std::string::npos);
  auto c = resolve(with({{"training", {{"resume", "latest"}, {"checkpoint_dir", "ckpt"}, {"save_interval", 10}}}}));
  CHECK(c.training.resume.name() == "latest");
  CHECK(resolve(with({{"training", {{"resume", ""}}}})).training.resume.name() == "none");
  CHECK(error_of(with({{"training", {{"resume", "auto"}}}})).find("training.resume: \"auto\" needs "
                                                                  "training.checkpoint_dir") != std::string::npos);
  CHECK(resolve(with({{"training", {{"resume", "auto"}, {"checkpoint_dir", "ckpt"}}}})).training.resume.name() ==
        "auto");
  CHECK(resolve(with({{"training", {{"save_dtype", "bf16"}}}})).training.save_dtype == zt::DType::BF16);
  CHECK(resolve(with({{"training", {{"save_dtype", "fp16"}}}})).training.save_dtype == zt::DType::F16);
  CHECK(error_of(with({{"training", {{"save_dtype", "fp8"}}}})).find("training.save_dtype") != std::string::npos);
}
