#pragma once
// The readers of the config's blocks, one per concept, each judging its own keys (docs/config.md).
// resolve.cpp calls them in dependency order: training, model, data, then DeepSpeed's blocks.
#include "config/auto_values.hpp"
#include "config/block.hpp"
#include "config/config.hpp"
#include "config/value_sources.hpp"

namespace zt::config {

// The Trainer's names of training keys (learning_rate, num_train_epochs, ...: config/trainer_arguments.hpp)
// become the keys in `raw`, so that everything after reads one name; both given is an error.
void take_trainer_names(nlohmann::json& raw, const Diagnostics& diag);
TrainingConfig read_training(Block& training);
ModelConfig read_model(Block& model);
DataConfig read_data(Block& data, const ModelConfig& model);
// The lora block (given: LoRA on unless it says enabled false), its target modules checked against
// the model's family.
LoraConfig read_lora(Block& lora, const ModelConfig& model, bool given);
// The preference block (given: preference training unless it says enabled false).
// lora: whether the run has LoRA adapters (what reference adapters_off turns off); model: the
// policy's, which a reference model directory must match.
PreferenceConfig read_preference(Block& preference, bool given, bool lora, const ModelConfig& model);

// Top level: batch sizes, clipping and the other scalar keys, and the keys that have no effect.
void read_top_level_scalars(Block& top, const AutoValues& auto_values, Config& config);
void read_ignored_top_level_keys(Block& top);
// data_types: its keys without effect, and keep_in_fp32_modules ("auto": the model family's modules).
void read_data_types(Block& top, const ModelConfig& model, Config& config);
// The keys DeepSpeed 0.19.8 removed: refused, or warned about where they ask for nothing.
void read_removed_top_level_keys(Block& top);
void read_removed_zero_keys(Block& zero);

void read_precision(Block& top, const AutoValues& auto_values, Config& config);  // fp16, bf16
OptimizerConfig read_optimizer(Block& top, const AutoValues& auto_values);
LrScheduleConfig read_scheduler(Block& top, const AutoValues& auto_values, const TrainingConfig& training,
                                double optimizer_lr);
ZeroConfig read_zero(Block& top, const AutoValues& auto_values);
// zero_optimization.compute_grad_norm false: as DeepSpeed, only at stages 1 and 2 without optimizer
// offload and without clipping asked for; the clipping that "auto" or the default gave is turned off.
void apply_compute_grad_norm(Config& config, const ValueSources& sources, const Diagnostics& diag);
void read_monitors(Block& top, Config& config);  // csv_monitor, tensorboard, wandb, comms_logger
CheckpointConfig read_checkpoint(Block& top);
AioConfig read_aio(Block& top);
// expert_parallel (DeepSpeed's AutoEP), judged against the model's experts and the world size.
ExpertParallelConfig read_expert_parallel(Block& top, const ModelConfig& model, int world_size);
ActivationCheckpointingConfig read_activation_checkpointing(Block& top);

// The note on weight decay printed in the resolved optimizer block (and accepted back as input).
extern const char* const kWeightDecayAppliesTo;

}  // namespace zt::config
