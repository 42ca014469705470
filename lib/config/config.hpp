#pragma once
// The resolved zerotrain configuration: DeepSpeed's JSON (0.19 semantics, docs/config.md) plus the
// model, data and training blocks. Every default filled in, every "auto" resolved.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/trainer_arguments.hpp"
#include "core/device.hpp"
#include "core/dtype_names.hpp"
#include "core/loss_scaler_options.hpp"
#include "core/name_table.hpp"
#include "core/offload_device.hpp"
#include "data/sample_rows.hpp"
#include "data/tokenizer_identity.hpp"
#include "model/gpt_shape.hpp"
#include "model/lora.hpp"
#include "optim/lr_schedule.hpp"

namespace zt::config {

struct OffloadOptimizerConfig {
  OffloadDevice device = OffloadDevice::None;
  std::string nvme_path;
  bool pin_memory = true;
  int64_t buffer_count = 4;
  bool fast_init = false;
  double ratio = 1.0;
};

struct OffloadParamConfig {
  OffloadDevice device = OffloadDevice::None;
  std::string nvme_path;
  bool pin_memory = true;
  int64_t buffer_count = 5;
  int64_t buffer_size = 100000000;
  int64_t max_in_cpu = 1000000000;
};

struct ZeroConfig {
  int stage = 0;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  int64_t reduce_bucket_size = 500000000;     // elements
  int64_t allgather_bucket_size = 500000000;  // elements
  bool overlap_comm = false;                  // resolved: true for stage 3 unless set
  bool load_from_fp32_weights = true;
  int64_t stage3_prefetch_bucket_size = 50000000;
  int64_t stage3_param_persistence_threshold = 100000;
  int64_t stage3_max_live_parameters = 1000000000;
  int64_t stage3_max_reuse_distance = 1000000000;
  bool stage3_gather_16bit_weights_on_model_save = false;
  int64_t sub_group_size = 1000000000;
  bool ignore_unused_parameters = true;
  bool compute_grad_norm = true;  // false (stages 1-2): no clipping and no grad_norm logged
  OffloadOptimizerConfig offload_optimizer;
  OffloadParamConfig offload_param;
};

struct Fp16Config : LossScalerOptions {
  bool enabled = false;
};

struct Bf16Config {
  bool enabled = false;
  bool check_grad_overflow = true;
};

struct OptimizerConfig {
  std::string type = "AdamW";  // canonical: Adam or AdamW
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool bias_correction = true;
  bool adam_w_mode = true;  // Adam with adam_w_mode false: L2 decay added to the gradient
};

struct MonitorConfig {
  bool enabled = false;
  std::string output_path;
  std::string job_name = "DeepSpeedJobName";
};

struct CommsLoggerConfig {
  bool enabled = false;
  bool verbose = false;
  bool prof_all = true;
  // Collective kinds as zerotrain names them (all_reduce, reduce_scatter, all_gather, broadcast,
  // barrier): DeepSpeed's op names (reduce_scatter_tensor, ...) are mapped when the config is read.
  std::vector<std::string> prof_ops;
};

struct CheckpointConfig {
  std::string tag_validation = "Warn";  // Warn | Ignore | Fail
  bool load_universal = false;
  bool use_node_local_storage = false;
};

// DeepSpeed's asynchronous I/O settings, used by NVMe offload.
struct AioConfig {
  int64_t block_size = 1048576;    // bytes per request
  int64_t queue_depth = 8;         // requests in flight per file
  int64_t intra_op_parallelism = 1;  // I/O threads
  bool single_submit = false;
  bool overlap_events = true;
  bool use_gds = false;
};

// DeepSpeed's AutoEP block: each sparse layer's experts split over groups of autoep_size ranks.
struct ExpertParallelConfig {
  bool enabled = false;
  int64_t autoep_size = 1;
  std::string preset_model;  // "" for none (DeepSpeed's null)
  // Ranks in an expert-parallel group (1: every rank holds every expert).
  int size() const { return enabled ? int(autoep_size) : 1; }
};

struct ActivationCheckpointingConfig {
  bool partition_activations = false;
  int64_t number_checkpoints = 0;  // 0: none
  bool contiguous_memory_optimization = false;
  bool cpu_checkpointing = false;
  bool recompute() const { return partition_activations || number_checkpoints > 0; }
};

// The architecture: its shape (lib/model/gpt_shape.hpp, every derived size written out) and where
// it came from.
struct ModelConfig {
  ModelConfig() = default;
  ModelConfig(std::string preset_name, GptShape s) : preset(std::move(preset_name)), shape(s.resolved()) {}

  std::string preset = "toy";  // the preset the shape equals, or "custom"
  std::string path;  // a Hugging Face model directory whose config.json gave the keys not set here; "" for none
  GptShape shape = gpt_preset("toy")->resolved();
  // That directory's config.json as it was read (null without one): an exported model carries its
  // other keys.
  nlohmann::ordered_json hf_config;
};

struct DataConfig {
  // Files read in order as one stream; glob patterns are expanded (sorted) when the config resolves.
  std::vector<std::string> train;  // default: the corpus shipped in data/
  std::vector<std::string> val;    // empty: no evaluation
  std::string format = "auto";  // auto | llmc | uint16 | text | synthetic
  int seq_len = 0;              // 0 resolves to the model's max_seq_len
  bool shuffle = true;
  // A token file made by another tokenizer than the model's (docs/data.md): refused, or a warning.
  TokenizerMismatch tokenizer_mismatch = TokenizerMismatch::Error;
  // Record data (samples, docs/data.md): one per row (none), several whole samples to a row (pack),
  // or the token stream's windows as for text (windows).
  Packing packing = Packing::None;
  Padding padding = Padding::Longest;  // a micro-batch's rows: to its longest row | max_length (seq_len)
  Truncation truncation = Truncation::Truncate;  // a sample longer than seq_len: its first seq_len tokens | dropped
};

inline constexpr const char* kRandomInit = "random";

// training.eval_strategy: evaluate when there is validation data (auto); evaluation asked for,
// validation data required (steps); never (no).
enum class EvalStrategy { Auto, Steps, No };
inline constexpr auto kEvalStrategyNames =
    name_table<EvalStrategy>({{EvalStrategy::Auto, "auto"}, {EvalStrategy::Steps, "steps"}, {EvalStrategy::No, "no"}});
// training.save_strategy, the Hugging Face Trainer's choices of what to keep (docs/config.md):
// every save_interval (steps), at each new best of metric_for_best_model (best), only the last
// step's (no).
enum class SaveStrategy { Steps, Best, No };
inline constexpr auto kSaveStrategyNames =
    name_table<SaveStrategy>({{SaveStrategy::Steps, "steps"}, {SaveStrategy::Best, "best"}, {SaveStrategy::No, "no"}});

// training.resume: from nowhere (none), checkpoint_dir's latest checkpoint (latest: there must be
// one; auto: when there is one), or a step directory named by its path.
enum class ResumeFrom { None, Latest, Auto, Path };
inline constexpr auto kResumeNames =
    name_table<ResumeFrom>({{ResumeFrom::None, "none"}, {ResumeFrom::Latest, "latest"}, {ResumeFrom::Auto, "auto"}});
struct Resume {
  ResumeFrom from = ResumeFrom::None;
  std::string path;  // ResumeFrom::Path
  bool asked() const { return from != ResumeFrom::None; }
  bool latest() const { return from == ResumeFrom::Latest || from == ResumeFrom::Auto; }
  // As the config writes it: "none", "latest", "auto" or the path.
  std::string name() const { return from == ResumeFrom::Path ? path : std::string(kResumeNames.name(from)); }
};  // training.init_from: random values of the architecture

struct TrainingConfig {
  int64_t steps = 100;  // when neither given, nor from epochs, nor from the scheduler's total_num_steps
  double epochs =
      0;  // passes over data.train (its windows, or the rows of its samples) that give the steps; 0: not given
  int64_t micro_batch_size = 4;
  int64_t gradient_accumulation_steps = 1;
  // The Hugging Face Trainer's defaults (TrainingArguments), what "auto" takes.
  double lr = 5e-5;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8, weight_decay = 0.0;
  int64_t warmup_steps = 0;
  double warmup_ratio = 0.0;  // warmup as a fraction of steps, when warmup_steps is 0
  // Without a scheduler block: one of the Trainer's schedules (optim/trainer_schedules.hpp).
  std::string lr_scheduler_type = "linear";
  nlohmann::json lr_scheduler_kwargs = nlohmann::json::object();  // the schedule's parameters, as given
  double max_grad_norm = 1.0;
  uint64_t seed = 1234;
  int64_t logging_steps = 10;   // a step line every N steps (and the first and the last); 0: only those
  bool gradient_checkpointing = false;  // recompute each block in backward
  int64_t eval_interval = 100;  // and after the last step; 0: no eval
  EvalStrategy eval_strategy = EvalStrategy::Auto;
  int64_t eval_batches = 0;  // windows (micro-batches) per evaluation over all ranks; 0: all of data.val
  int64_t sample_every = 0;     // print a sample of generated text every N steps; 0: never
  int64_t sample_tokens = 64;   // tokens of a sample
  std::string sample_prompt;    // the text a sample continues; "": the start of a document
  std::string sample_tokenizer;  // the tokenizer of the data; "": bytes (a vocabulary of 256)
  int64_t save_interval = 0;  // 0: no periodic checkpoints
  int64_t keep_last = 0;      // 0: keep all (the best checkpoint is always kept)
  SaveStrategy save_strategy = SaveStrategy::Steps;
  std::string metric_for_best_model;  // eval_loss when anything asks for the best; "" otherwise
  bool greater_is_better = false;
  bool load_best_model_at_end = false;  // save_final writes the best checkpoint's model
  int64_t early_stopping_patience = 0;  // evaluations without improvement that end the run; 0: never
  double early_stopping_threshold = 0.0;  // the improvement that counts: more than this
  std::string checkpoint_dir;
  Resume resume;
  // A Hugging Face model directory, a safetensors file or a checkpoint, or "random"; resolved from
  // "" to model.path's own weights, else random (config/model_block.hpp).
  std::string init_from;
  bool random_init() const { return init_from.empty() || init_from == kRandomInit; }
  std::string save_final;       // directory
  DType save_dtype = DType::F32;  // the dtype of save_final
  std::string log_dir;
  std::string metrics;          // JSONL path
  double comm_timeout = 600.0;  // seconds
  DeviceChoice device = DeviceChoice::Auto;
  int64_t device_memory_limit = 0;  // bytes the run may hold in the device's memory; 0: all it has
  bool cuda_graph = false;          // replay each micro-batch's forward and backward as a CUDA graph
  // Hugging Face name patterns of parameters that do not train (model/name_pattern.hpp).
  std::vector<std::string> freeze;
  bool overwrite = false;  // outputs may be written where inputs lie (train/output_paths.hpp)

  // The warmup in steps, as the Hugging Face Trainer counts it: warmup_steps, else
  // ceil(steps * warmup_ratio).
  int64_t warmup_step_count() const;
  bool tracks_best() const { return !metric_for_best_model.empty(); }
  // Evaluation was asked for (eval_strategy steps, save_strategy best, load_best_model_at_end,
  // early stopping): without validation data the run refuses to start. The key that asked, or "".
  std::string evaluation_asked_by() const;
};

// LoRA adapters (docs/models.md), with PEFT's LoraConfig keys.
struct LoraConfig {
  bool enabled = false;  // true when the block is given
  int64_t r = 8;
  double alpha = 8.0;    // PEFT's lora_alpha
  double dropout = 0.0;  // PEFT's lora_dropout
  // Module names as PEFT's target_modules ("q_proj", ..., "all-linear"); resolved to the family's
  // default when not given.
  std::vector<std::string> target_modules;
  bool use_rslora = false;  // scale alpha / sqrt(r) instead of alpha / r
  std::string init_from;    // a PEFT adapter directory the adapters start from ("": PEFT's init)
  bool save_merged = false;  // training.save_final writes the merged model, not the adapter directory
};

// Preference training (docs/config.md, "preference"): the objective of pairs of a chosen and a
// rejected completion, with TRL's DPOConfig names.
constexpr double kPreferenceLearningRate = 1e-6;  // training.lr's default with a preference block (DPOConfig's)
// preference.loss_type: DPO's sigmoid, robust (label_smoothing) and ipo against a reference; SimPO
// (CPOTrainer's loss_type "simpo") and ORPO (ORPOTrainer) without one.
enum class PreferenceLoss { Sigmoid, Robust, Ipo, Simpo, Orpo };
inline constexpr auto kPreferenceLossNames =
    name_table<PreferenceLoss>({{PreferenceLoss::Sigmoid, "sigmoid"},
                                {PreferenceLoss::Robust, "robust"},
                                {PreferenceLoss::Ipo, "ipo"},
                                {PreferenceLoss::Simpo, "simpo"},
                                {PreferenceLoss::Orpo, "orpo"}});
// preference.reference: "precompute", "adapters_off", or a model directory (Model, which has no name).
enum class PreferenceReferenceSource { Precompute, AdaptersOff, Model };
inline constexpr auto kPreferenceReferenceNames = name_table<PreferenceReferenceSource>(
    {{PreferenceReferenceSource::Precompute, "precompute"}, {PreferenceReferenceSource::AdaptersOff, "adapters_off"}});
struct PreferenceConfig {
  bool enabled = false;  // true when the block is given
  PreferenceLoss loss_type = PreferenceLoss::Sigmoid;
  double beta = 0.1;
  double label_smoothing = 0.0;  // robust: the share of pairs taken to be flipped, in [0, 0.5)
  // The weight of the chosen completions' mean NLL added to the loss (RPO; CPOConfig's cpo_alpha
  // for simpo); 0: none.
  double rpo_alpha = 0.0;
  double simpo_gamma = 0.5;  // simpo: the target margin of the length-normalised rewards
  // Whether the loss compares against reference log-probabilities (SimPO and ORPO do not: no
  // reference pass).
  bool has_reference() const { return loss_type != PreferenceLoss::Simpo && loss_type != PreferenceLoss::Orpo; }
  // ORPO's NLL covers the chosen sequence's prompt too: its targets count in the chosen rows.
  bool chosen_prompt_counts() const { return loss_type == PreferenceLoss::Orpo; }
  // The weight of the chosen sequences' mean NLL in the loss: ORPO's 1, else rpo_alpha.
  double nll_weight() const { return loss_type == PreferenceLoss::Orpo ? 1.0 : rpo_alpha; }
  // The reference log-probabilities, one pass before training: of the initial weights (precompute),
  // of the model with its LoRA adapters off (adapters_off: PEFT's reference without a ref_model), or
  // of another model directory's weights in the policy's place (model: TRL's ref_model).
  PreferenceReferenceSource reference = PreferenceReferenceSource::Precompute;
  std::string reference_model;  // with reference model: the directory
  // The reference as the config writes it: its name, or the directory.
  std::string reference_text() const {
    return reference == PreferenceReferenceSource::Model ? reference_model
                                                         : std::string(kPreferenceReferenceNames.name(reference));
  }
};

// How the learning rate, the schedule, the batch and the precision were decided, in words
// (config/provenance.hpp).
struct Provenance {
  std::string lr, schedule, batch, precision, length, weights;
  std::string logging;  // "" unless the config's steps_per_print might be taken for the log's interval
};

struct Config {
  int world_size = 1;
  // batch sizes, resolved so that train_batch_size = micro * accumulation * world_size
  int64_t train_batch_size = 0;
  int64_t train_micro_batch_size_per_gpu = 0;
  int64_t gradient_accumulation_steps = 0;
  double gradient_clipping = 1.0;  // 0 disables
  int64_t steps_per_print = 10;
  bool wall_clock_breakdown = false;
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;
  std::string communication_data_type;  // fp32 | bf16 | fp16; resolved to the training dtype
  bool zero_allow_untested_optimizer = false;
  bool zero_force_ds_cpu_optimizer = true;
  bool dump_state = false;
  // data_types.keep_in_fp32_modules: name patterns of the parameters kept in fp32 under bf16/fp16
  // ("auto" resolved to the family's, model/gpt_layout.hpp fp32_module_patterns).
  std::vector<std::string> keep_in_fp32_modules;

  ZeroConfig zero;
  Fp16Config fp16;
  Bf16Config bf16;
  OptimizerConfig optimizer;
  LrScheduleConfig scheduler;  // type "" when there is no scheduler block
  MonitorConfig csv_monitor, tensorboard, wandb;
  CommsLoggerConfig comms_logger;
  CheckpointConfig checkpoint;
  ActivationCheckpointingConfig activation_checkpointing;
  AioConfig aio;
  ExpertParallelConfig expert_parallel;

  ModelConfig model;
  DataConfig data;
  TrainingConfig training;
  LoraConfig lora;
  PreferenceConfig preference;

  std::string source;  // where the config came from (file path or preset name), for messages
  std::string model_file;  // the file --model read the model block from, if any
  Provenance provenance;
  DType training_dtype() const { return fp16.enabled ? DType::F16 : bf16.enabled ? DType::BF16 : DType::F32; }
  std::string dtype() const { return std::string(dtype_name(training_dtype())); }
  // The rows of a micro-batch: train_micro_batch_size_per_gpu, or twice as many with a preference
  // block (a pair's chosen and rejected rows).
  int64_t micro_batch_rows() const { return train_micro_batch_size_per_gpu * (preference.enabled ? 2 : 1); }
  // Activations are recomputed in backward (DeepSpeed's activation checkpointing, or the Trainer's
  // gradient_checkpointing).
  bool recompute_activations() const { return activation_checkpointing.recompute() || training.gradient_checkpointing; }
};

// Everything the command line contributes to resolution.
// Where a resumed run stands: its last saved step and how far through the data it had read.
struct ResumedPosition {
  int64_t step = 0;
  double epochs = 0;
};

struct ResolveOptions {
  int world_size = 1;
  std::vector<std::string> overrides;  // "KEY=VALUE" from --set, applied in order
  std::optional<std::string> model;    // --model FILE|PRESET|DIR
  std::string model_option = "--model";  // or --model_name_or_path: named where the model came from
  std::optional<std::string> data;     // --data PATH
  std::optional<int64_t> steps;        // --steps N
  std::vector<TrainerArgumentValue> trainer_arguments;  // --learning_rate 2e-5, ... (config/trainer_arguments.hpp)
  bool gpu_supports_bf16 = false;      // CUDA device with compute capability >= 8.0
  bool cpu_backend = true;             // the CPU backend stores bf16 (auto picks bf16 there)
  // The position of the checkpoint training.resume names, when there is one (read by the caller,
  // which knows checkpoints): a length in epochs then counts the epochs left from there at this
  // run's batch, so that a resume with another batch still covers the epochs asked.
  std::function<std::optional<ResumedPosition>(const TrainingConfig&)> resumed_position = {};
};

// Finds FILE, or configs/NAME.json for a preset name (the path as given, then the source tree's
// and the installed configs/ folders). Throws zt::Error listing where it looked.
std::string find_config_file(const std::string& name_or_path);
// Parses (comments allowed, duplicate keys rejected), judges and resolves. Warnings go to spdlog.
// Throws zt::Error whose message names the JSON path, the value and what was expected.
Config load_config(const std::string& name_or_path, const ResolveOptions& options);
Config resolve_config(const nlohmann::json& raw, const ResolveOptions& options, const std::string& source);
// The resolved config as JSON with DeepSpeed's canonical key names plus model, data, training.
nlohmann::json to_json(const Config& config);
// The model block of to_json: what a checkpoint records as its architecture.
nlohmann::json model_json(const ModelConfig& model);
// What of the model trains: the lora block and training.freeze (model/lora.hpp).
TrainedParts trained_parts(const Config& config);

}  // namespace zt::config
