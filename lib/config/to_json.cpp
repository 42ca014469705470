// The resolved config as JSON: DeepSpeed's canonical key names plus model, data and training.
// It loads back into the same Config (a fixed point of resolve_config at the same world size).
#include "config/blocks.hpp"
#include "config/config.hpp"
#include "optim/trainer_schedules.hpp"
#include "hf/hf_config.hpp"

namespace zt::config {

namespace {

using nlohmann::json;

json zero_json(const ZeroConfig& z) {
  const auto& oo = z.offload_optimizer;
  const auto& op = z.offload_param;
  return {{"stage", z.stage},
          {"contiguous_gradients", z.contiguous_gradients},
          {"reduce_scatter", z.reduce_scatter},
          {"reduce_bucket_size", z.reduce_bucket_size},
          {"allgather_bucket_size", z.allgather_bucket_size},
          {"overlap_comm", z.overlap_comm},
          {"load_from_fp32_weights", z.load_from_fp32_weights},
          {"stage3_prefetch_bucket_size", z.stage3_prefetch_bucket_size},
          {"stage3_param_persistence_threshold", z.stage3_param_persistence_threshold},
          {"stage3_max_live_parameters", z.stage3_max_live_parameters},
          {"stage3_max_reuse_distance", z.stage3_max_reuse_distance},
          {"stage3_gather_16bit_weights_on_model_save", z.stage3_gather_16bit_weights_on_model_save},
          {"sub_group_size", z.sub_group_size},
          {"ignore_unused_parameters", z.ignore_unused_parameters},
          {"offload_optimizer",
           {{"device", kOffloadDeviceNames.name(oo.device)},
            {"nvme_path", oo.nvme_path.empty() ? json(nullptr) : json(oo.nvme_path)},
            {"pin_memory", oo.pin_memory},
            {"buffer_count", oo.buffer_count},
            {"fast_init", oo.fast_init},
            {"ratio", oo.ratio}}},
          {"offload_param",
           {{"device", kOffloadDeviceNames.name(op.device)},
            {"nvme_path", op.nvme_path.empty() ? json(nullptr) : json(op.nvme_path)},
            {"pin_memory", op.pin_memory},
            {"buffer_count", op.buffer_count},
            {"buffer_size", op.buffer_size},
            {"max_in_cpu", op.max_in_cpu}}}};
}

json optimizer_json(const OptimizerConfig& o) {
  return {{"type", o.type},
          {"params",
           {{"lr", o.lr},
            {"betas", {o.beta1, o.beta2}},
            {"eps", o.eps},
            {"weight_decay", o.weight_decay},
            {"bias_correction", o.bias_correction},
            {"adam_w_mode", o.adam_w_mode}}},
          {"weight_decay_applies_to", kWeightDecayAppliesTo}};
}

json scheduler_json(const LrScheduleConfig& s) {
  // No block: the schedule follows from training.lr_scheduler_type, warmup_steps and warmup_ratio.
  if (s.type.empty() || is_trainer_schedule(s.type)) return nullptr;
  json p;
  auto nullable = [](int64_t v) { return v < 0 ? json(nullptr) : json(v); };
  if (s.type == "WarmupLR" || s.type == "WarmupDecayLR") {
    p = {{"warmup_min_lr", s.warmup_min_lr},
         {"warmup_max_lr", s.warmup_max_lr},
         {"warmup_num_steps", s.warmup_num_steps},
         {"warmup_type", s.warmup_type}};
    if (s.type == "WarmupDecayLR") p["total_num_steps"] = s.total_num_steps;
  } else if (s.type == "WarmupCosineLR") {
    p = {{"total_num_steps", s.total_num_steps},
         {"warmup_min_ratio", s.warmup_min_ratio},
         {"warmup_num_steps", s.warmup_num_steps},
         {"cos_min_ratio", s.cos_min_ratio},
         {"warmup_type", s.warmup_type}};
  } else if (s.type == "OneCycle") {
    p = {{"cycle_min_lr", s.cycle_min_lr},
         {"cycle_max_lr", s.cycle_max_lr},
         {"decay_lr_rate", s.decay_lr_rate},
         {"cycle_first_step_size", s.cycle_first_step_size},
         {"cycle_second_step_size", nullable(s.cycle_second_step_size)},
         {"cycle_first_stair_count", s.cycle_first_stair_count},
         {"cycle_second_stair_count", nullable(s.cycle_second_stair_count)},
         {"decay_step_size", s.decay_step_size},
         {"cycle_momentum", s.cycle_momentum},
         {"cycle_min_mom", s.cycle_min_mom},
         {"cycle_max_mom", s.cycle_max_mom},
         {"decay_mom_rate", s.decay_mom_rate}};
  } else {
    p = {{"lr_range_test_min_lr", s.lr_range_test_min_lr},
         {"lr_range_test_step_size", s.lr_range_test_step_size},
         {"lr_range_test_step_rate", s.lr_range_test_step_rate},
         {"lr_range_test_staircase", s.lr_range_test_staircase}};
  }
  return {{"type", s.type}, {"params", p}};
}

json monitor_json(const MonitorConfig& m) {
  return {{"enabled", m.enabled}, {"output_path", m.output_path}, {"job_name", m.job_name}};
}

// One file as a string (how configs give it), several as a list, none as "".
json files_json(const std::vector<std::string>& files) {
  if (files.size() == 1) return files.front();
  if (files.empty()) return "";
  return files;
}

json training_json(const TrainingConfig& t) {
  return {{"steps", t.steps},
          {"epochs", t.epochs},
          {"micro_batch_size", t.micro_batch_size},
          {"gradient_accumulation_steps", t.gradient_accumulation_steps},
          {"lr", t.lr},
          {"adam_beta1", t.adam_beta1},
          {"adam_beta2", t.adam_beta2},
          {"adam_epsilon", t.adam_epsilon},
          {"weight_decay", t.weight_decay},
          {"warmup_steps", t.warmup_steps},
          {"warmup_ratio", t.warmup_ratio},
          {"lr_scheduler_type", t.lr_scheduler_type.empty() ? json(nullptr) : json(t.lr_scheduler_type)},
          {"lr_scheduler_kwargs", t.lr_scheduler_kwargs},
          {"max_grad_norm", t.max_grad_norm},
          {"seed", t.seed},
          {"logging_steps", t.logging_steps},
          {"gradient_checkpointing", t.gradient_checkpointing},
          {"eval_interval", t.eval_interval},
          {"eval_strategy", kEvalStrategyNames.name(t.eval_strategy)},
          {"eval_batches", t.eval_batches},
          {"sample_every", t.sample_every},
          {"sample_tokens", t.sample_tokens},
          {"sample_prompt", t.sample_prompt},
          {"sample_tokenizer", t.sample_tokenizer},
          {"save_interval", t.save_interval},
          {"keep_last", t.keep_last},
          {"save_strategy", kSaveStrategyNames.name(t.save_strategy)},
          {"metric_for_best_model", t.metric_for_best_model},
          {"greater_is_better", t.greater_is_better},
          {"load_best_model_at_end", t.load_best_model_at_end},
          {"early_stopping_patience", t.early_stopping_patience},
          {"early_stopping_threshold", t.early_stopping_threshold},
          {"checkpoint_dir", t.checkpoint_dir},
          {"resume", t.resume.name()},
          {"init_from", t.init_from},
          {"save_final", t.save_final},
          {"save_dtype", dtype_name(t.save_dtype)},
          {"log_dir", t.log_dir},
          {"metrics", t.metrics},
          {"comm_timeout", t.comm_timeout},
          {"device", kDeviceChoiceNames.name(t.device)},
          {"device_memory_limit", t.device_memory_limit},
          {"cuda_graph", t.cuda_graph},
          {"freeze", t.freeze},
          {"overwrite", t.overwrite}};
}

json preference_json(const PreferenceConfig& p) {
  return {{"enabled", p.enabled},
          {"loss_type", kPreferenceLossNames.name(p.loss_type)},
          {"beta", p.beta},
          {"label_smoothing", p.label_smoothing},
          {"rpo_alpha", p.rpo_alpha},
          // What the loss does not read is null, so that the printed config reads back.
          {"simpo_gamma", p.loss_type == PreferenceLoss::Simpo ? json(p.simpo_gamma) : json(nullptr)},
          {"reference", p.has_reference() ? json(p.reference_text()) : json(nullptr)}};
}

json lora_json(const LoraConfig& l) {
  return {{"enabled", l.enabled},         {"r", l.r},
          {"alpha", l.alpha},             {"dropout", l.dropout},
          {"target_modules", l.target_modules}, {"use_rslora", l.use_rslora},
          {"init_from", l.init_from},     {"save_merged", l.save_merged}};
}

}  // namespace

// The model block: where the architecture came from, and its keys (hf/hf_config.hpp).
nlohmann::json model_json(const ModelConfig& m) {
  nlohmann::json j = model_keys(m.shape);
  j["preset"] = m.preset;
  j["path"] = m.path;
  return j;
}

nlohmann::json to_json(const Config& c) {
  const auto& f = c.fp16;
  const auto& a = c.activation_checkpointing;
  const auto& m = c.model;
  const auto& d = c.data;
  return {
      {"train_batch_size", c.train_batch_size},
      {"train_micro_batch_size_per_gpu", c.train_micro_batch_size_per_gpu},
      {"gradient_accumulation_steps", c.gradient_accumulation_steps},
      {"gradient_clipping", c.gradient_clipping},
      {"steps_per_print", c.steps_per_print},
      {"wall_clock_breakdown", c.wall_clock_breakdown},
      {"prescale_gradients", c.prescale_gradients},
      {"gradient_predivide_factor", c.gradient_predivide_factor},
      {"communication_data_type", c.communication_data_type.empty() ? c.dtype() : c.communication_data_type},
      {"zero_allow_untested_optimizer", c.zero_allow_untested_optimizer},
      {"zero_force_ds_cpu_optimizer", c.zero_force_ds_cpu_optimizer},
      {"dump_state", c.dump_state},
      {"zero_optimization", zero_json(c.zero)},
      {"fp16",
       {{"enabled", f.enabled},
        {"loss_scale", f.loss_scale},
        {"initial_scale_power", f.initial_scale_power},
        {"loss_scale_window", f.loss_scale_window},
        {"hysteresis", f.hysteresis},
        {"consecutive_hysteresis", f.consecutive_hysteresis},
        {"min_loss_scale", f.min_loss_scale}}},
      {"data_types", {{"keep_in_fp32_modules", c.keep_in_fp32_modules}}},
      {"bf16", {{"enabled", c.bf16.enabled}, {"check_grad_overflow", c.bf16.check_grad_overflow}}},
      {"optimizer", optimizer_json(c.optimizer)},
      {"scheduler", scheduler_json(c.scheduler)},
      {"csv_monitor", monitor_json(c.csv_monitor)},
      {"tensorboard", monitor_json(c.tensorboard)},
      {"wandb", {{"enabled", c.wandb.enabled}}},
      {"comms_logger",
       {{"enabled", c.comms_logger.enabled},
        {"verbose", c.comms_logger.verbose},
        {"prof_all", c.comms_logger.prof_all},
        {"prof_ops", c.comms_logger.prof_ops}}},
      {"checkpoint",
       {{"tag_validation", c.checkpoint.tag_validation},
        {"load_universal", c.checkpoint.load_universal},
        {"use_node_local_storage", c.checkpoint.use_node_local_storage}}},
      {"aio",
       {{"block_size", c.aio.block_size},
        {"queue_depth", c.aio.queue_depth},
        {"intra_op_parallelism", c.aio.intra_op_parallelism},
        {"single_submit", c.aio.single_submit},
        {"overlap_events", c.aio.overlap_events},
        {"use_gds", c.aio.use_gds}}},
      {"expert_parallel",
       {{"enabled", c.expert_parallel.enabled},
        {"autoep_size", c.expert_parallel.autoep_size},
        {"load_balance_coeff", nullptr},
        {"preset_model", c.expert_parallel.preset_model.empty() ? nlohmann::json(nullptr)
                                                                : nlohmann::json(c.expert_parallel.preset_model)}}},
      {"activation_checkpointing",
       {{"partition_activations", a.partition_activations},
        {"number_checkpoints", a.number_checkpoints},
        {"contiguous_memory_optimization", a.contiguous_memory_optimization},
        {"cpu_checkpointing", a.cpu_checkpointing}}},
      {"model", model_json(m)},
      {"data",
       {{"train", files_json(d.train)},
        {"val", files_json(d.val)},
        {"format", d.format},
        {"seq_len", d.seq_len},
        {"shuffle", d.shuffle},
        {"tokenizer_mismatch", kTokenizerMismatchNames.name(d.tokenizer_mismatch)},
        {"packing", kPackingNames.name(d.packing)},
        {"padding", kPaddingNames.name(d.padding)},
        {"truncation", kTruncationNames.name(d.truncation)}}},
      {"training", training_json(c.training)},
      {"lora", lora_json(c.lora)},
      {"preference", preference_json(c.preference)},
  };
}

}  // namespace zt::config
