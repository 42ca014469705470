// zerotrain end to end: exit codes, machine-readable stdout, warnings and errors on stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Run {
  int code = -1;
  std::string out, err;
};

const fs::path& scratch() {
  static const fs::path dir = [] {
    auto d = fs::temp_directory_path() / ("zt_test_cli_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Runs zerotrain with `args` (shell syntax) outside any MPI launcher, with `env` ("NAME=VALUE ...")
// added to its environment.
Run zerotrain(const std::string& args, const std::string& env = "") {
  const auto err_file = scratch() / "stderr.txt";
  const std::string command = "env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE -u RANK -u WORLD_SIZE "
                              "-u LOCAL_RANK " + env + " '" + std::string(ZEROTRAIN_BIN) + "' " + args + " 2>'" +
                              err_file.string() + "'";
  Run r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

std::string write_config(const std::string& name, const std::string& text) {
  auto path = scratch() / name;
  std::ofstream(path) << text;
  return path.string();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("--help and --version exit 0 on stdout") {
  auto help = zerotrain("--help");
  CHECK(help.code == 0);
  CHECK(contains(help.out, "--config"));
  CHECK(contains(help.out, "--print-config"));
  CHECK(contains(help.out, "Examples:"));
  CHECK(contains(help.out, "estimate"));
  CHECK(contains(help.out, "zerotrain export checkpoints -o hf_model"));
  // How an interrupted run ends, for scheduler scripts.
  CHECK(contains(help.out, "exits with status 75 (EX_TEMPFAIL)"));
  CHECK(contains(help.out, "training.resume auto"));
  CHECK_FALSE(contains(help.out, "exits 0"));
  auto est = zerotrain("estimate --help");
  CHECK(est.code == 0);
  CHECK(contains(est.out, "--world-size"));
  CHECK(contains(est.out, "zerotrain estimate --model gpt2-1.5b --world-size 8"));
  auto exp = zerotrain("export --help");
  CHECK(exp.code == 0);
  CHECK(contains(exp.out, "zerotrain export"));
  CHECK(contains(exp.out, "--dtype"));
  CHECK(contains(exp.out, "Examples:"));
  auto version = zerotrain("--version");
  CHECK(version.code == 0);
  CHECK(contains(version.out, "zerotrain "));
}

TEST_CASE("every help text speaks of all the model families and devices it serves") {
  const auto help = zerotrain("--help");
  for (const char* family : {"GPT-2", "Llama", "Mistral", "Qwen2", "Qwen3", "Gemma 2", "Gemma 3", "Qwen3-MoE",
                             "Qwen2-MoE", "Mixtral", "OLMoE"}) {
    INFO(family);
    CHECK(contains(help.out.substr(0, help.out.find("Options:")), family));  // the first lines say what it trains
    CHECK(contains(help.out.substr(help.out.find("--model")), family));     // and --model takes their directories
  }
  CHECK(contains(help.out, "GPUs"));
  for (const char* command : {"generate", "eval", "estimate"}) {
    auto sub = zerotrain(std::string(command) + " --help");
    std::replace(sub.out.begin(), sub.out.end(), '\n', ' ');  // the footers wrap their lines
    INFO(command << "\n" << sub.out);
    CHECK(sub.code == 0);
    CHECK(contains(sub.out, "Hugging Face model directory"));
    CHECK_FALSE(contains(sub.out, "GPT-2 weights"));
    if (std::string(command) != "estimate")
      for (const char* family :
           {"Llama, Mistral, Qwen2, Qwen3", "Gemma 2, Gemma 3", "Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE"})
        CHECK(contains(sub.out, family));
  }
  // --model names every preset (those of configs/models, as --model finds them).
  const std::string model_help = help.out.substr(help.out.find("--model"), help.out.find("--data") - help.out.find("--model"));
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ZT_SOURCE_DIR) + "/configs/models")) {
    const std::string preset = entry.path().stem().string();
    INFO(preset);
    CHECK((contains(model_help, preset + ",") || contains(model_help, preset + ")")));
  }
}

TEST_CASE("--print-config writes only the resolved JSON to stdout") {
  auto r = zerotrain("--print-config");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);  // throws if anything but JSON is on stdout
  CHECK(j["train_micro_batch_size_per_gpu"] == 4);
  CHECK(j["train_batch_size"] == 4);
  CHECK(j["model"]["preset"] == "toy");

  auto p = zerotrain("--config zero2 --print-config --world-size 8 --set zero_optimization.stage=3 --steps 7");
  REQUIRE(p.code == 0);
  auto k = nlohmann::json::parse(p.out);
  CHECK(k["train_batch_size"] == 32);
  CHECK(k["zero_optimization"]["stage"] == 3);
  CHECK(k["training"]["steps"] == 7);
  CHECK(k["bf16"]["enabled"] == true);
  CHECK(k["scheduler"]["params"]["total_num_steps"] == 7);

  auto m = zerotrain("--config zero1 --model gpt2-124m --print-config");
  REQUIRE(m.code == 0);
  CHECK(nlohmann::json::parse(m.out)["model"]["d_model"] == 768);
}

TEST_CASE("warnings go to stderr, stdout stays JSON") {
  auto file = write_config("warn.json", R"({"train_micro_batch_size_per_gpu": 2, "other_tools_setting": {"x": 1}})");
  auto r = zerotrain("--config '" + file + "' --print-config");
  CHECK(r.code == 0);
  CHECK_NOTHROW(nlohmann::json::parse(r.out));
  CHECK(contains(r.err, "other_tools_setting: unknown key (ignored)"));
  CHECK_FALSE(contains(r.out, "other_tools_setting"));
  // Log lines carry the rank with one rank too, as with several.
  CHECK(contains(r.err, "[rank 0] warning: " + file + ": other_tools_setting: unknown key"));
}

TEST_CASE("near misses of known keys and unknown --set keys stop the run before it starts") {
  auto file = write_config("typos.json", R"({"train_micro_batch_size_per_gpu": 2, "zero_optimisation": {"stage": 3},
                                             "gradient_acumulation_steps": 4})");
  for (const char* mode : {" --print-config", " --steps 1"}) {
    INFO(mode);
    auto r = zerotrain("--config '" + file + "'" + mode);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "error: " + file + ": zero_optimisation: unknown key; did you mean zero_optimization?\n"));
    CHECK(contains(r.err, "error: " + file + ": gradient_acumulation_steps: unknown key; did you mean "
                          "gradient_accumulation_steps?\n"));
  }
  auto set = zerotrain("--config zero2 --set traning.steps=5 --steps 5");
  CHECK(set.code == 2);
  CHECK(set.err == "error: --set traning.steps=5: traning: unknown key; did you mean training?\n");
}

TEST_CASE("all the errors of a config come in one run, one line each") {
  auto file = write_config("many.json", R"({"train_micro_batch_size_per_gpu": 2,
      "fp16": {"enabled": true}, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 4, "overlap_com": true},
      "optimizer": {"type": "AdamW", "params": {"lr": 0, "betas": [0.9, 0.999], "weight_decay": 0}}})");
  auto r = zerotrain("--config '" + file + "' --print-config");
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "error: " + file + ": fp16.enabled: true together with bf16.enabled true (expected at most one of "
                 "fp16 and bf16)\n"
                 "error: " + file + ": optimizer.params.lr: 0 is out of range (expected > 0)\n"
                 "error: " + file + ": zero_optimization.stage: 4 is out of range (expected 0..3)\n"
                 "error: " + file + ": zero_optimization.overlap_com: unknown key; did you mean overlap_comm?\n");
}

TEST_CASE("a training key that its DeepSpeed key overrules is an error naming both") {
  auto file = write_config("lr.json", R"({"train_micro_batch_size_per_gpu": 2,
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.999], "weight_decay": 0}}})");
  auto r = zerotrain("--config '" + file + "' --set training.lr=5e-4 --steps 1");
  CHECK(r.code == 2);
  CHECK(r.err == "error: --set training.lr=5e-4: training.lr: 0.0005 is not used: optimizer.params.lr is 0.001 "
                 "(config) (expected only one of them: set optimizer.params.lr to \"auto\" to use training.lr, or "
                 "leave training.lr out)\n");
}

TEST_CASE("the start says where lr, schedule, batch and precision came from") {
  auto r = zerotrain("--steps 2 --set training.lr=5e-4 --set training.warmup_steps=1 --set training.eval_interval=0");
  REQUIRE(r.code == 0);
  CHECK(contains(r.err, "info: lr 0.0005 from training.lr (--set training.lr=5e-4), no optimizer block\n"));
  CHECK(contains(r.err, "info: schedule linear, the Hugging Face Trainer's (no scheduler block, "
                        "training.lr_scheduler_type default): warmup 1 steps from training.warmup_steps (--set "
                        "training.warmup_steps=1), then down to 0 at step 2\n"));
  CHECK(contains(r.err, "info: batch 4 = 4 x 1 x 1 rank from train_micro_batch_size_per_gpu \"auto\" (config) = "
                        "training.micro_batch_size (default)"));
  CHECK(contains(r.err, "info: precision fp32, the default (neither fp16 nor bf16 enabled)\n"));
}

TEST_CASE("--deepspeed and --deepspeed_config are --config") {
  auto config = zerotrain("--config zero3 --print-config");
  REQUIRE(config.code == 0);
  for (const char* spelling : {"--deepspeed zero3", "--deepspeed=zero3", "--deepspeed_config zero3"}) {
    INFO(spelling);
    auto r = zerotrain(std::string(spelling) + " --print-config");
    CHECK(r.code == 0);
    CHECK(r.out == config.out);
  }
  CHECK(contains(zerotrain("--help").out, "--deepspeed"));
  CHECK(zerotrain("--config zero2 --deepspeed zero3 --print-config").code == 2);  // one config
}

TEST_CASE("--local_rank is accepted and checked against the launcher's local rank") {
  auto config = zerotrain("--config zero2 --print-config");
  for (const char* spelling : {"--local_rank 0", "--local_rank=0", "--local-rank=0"}) {
    INFO(spelling);
    auto r = zerotrain("--config zero2 --print-config " + std::string(spelling));
    CHECK(r.code == 0);
    CHECK(r.out == config.out);
    CHECK(contains(r.err, "info: --local_rank 0 ignored: no launcher's local rank in the environment"));
  }
  auto agree = zerotrain("--config zero2 --print-config --local_rank=2", "SLURM_LOCALID=2");
  CHECK(agree.code == 0);
  CHECK(contains(agree.err, "info: --local_rank 2 agrees with SLURM_LOCALID"));
  auto disagree = zerotrain("--config zero2 --steps 1 --local_rank=0", "LOCAL_RANK=1");
  CHECK(disagree.code == 2);
  CHECK(disagree.err == "error: --local_rank 0: this process is local rank 1 (LOCAL_RANK=1); zerotrain takes its "
                        "rank from the launcher, so the argument must agree with it or be left out\n");
}

TEST_CASE("a bad config exits 2 with one error line naming the key") {
  auto file = write_config("bad.json", R"({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 4}})");
  for (const char* mode : {" --print-config", ""}) {
    INFO(mode);
    auto r = zerotrain("--config '" + file + "'" + mode);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "error: " + file + ": zero_optimization.stage: 4 is out of range (expected 0..3)\n");
  }
  auto missing = zerotrain("--config no_such_preset --print-config");
  CHECK(missing.code == 2);
  CHECK(contains(missing.err, "error: --config no_such_preset: no such file or preset"));
  auto batch = write_config("batch.json", R"({"train_batch_size": 32, "train_micro_batch_size_per_gpu": 3,
                                               "gradient_accumulation_steps": 2})");
  auto b = zerotrain("--config '" + batch + "' --print-config --world-size 4");
  CHECK(b.code == 2);
  CHECK(contains(b.err, "train_batch_size 32 != micro 3 * accumulation 2 * world 4"));
}

TEST_CASE("a bad --set value is reported against the option, a bad file value against the file") {
  auto r = zerotrain("--config zero2 --set zero_optimization.stage=5 --print-config");
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "error: --set zero_optimization.stage=5: zero_optimization.stage: 5 is out of range (expected 0..3)\n");
  auto file =
      write_config("bad_stage.json", R"({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 4}})");
  auto f = zerotrain("--config '" + file + "' --set zero_optimization.overlap_comm=true --print-config");
  CHECK(f.code == 2);
  CHECK(f.err == "error: " + file + ": zero_optimization.stage: 4 is out of range (expected 0..3)\n");
}

TEST_CASE("numeric options say plainly what they take") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--config zero2 --steps 0", "error: --steps: must be a positive integer, got 0"},
      {"--config zero2 --steps -3", "error: --steps: must be a positive integer, got -3"},
      {"--config zero2 --steps 2.5", "error: --steps: must be a positive integer, got 2.5"},
      {"--config zero2 --steps many", "error: --steps: must be a positive integer, got many"},
      {"--print-config --world-size 0", "error: --world-size: must be a positive integer, got 0"},
      {"--print-config --world-size 99999999999", "error: --world-size: must be a positive integer up to 2147483647, "
                                                  "got 99999999999"},
      {"estimate --model toy --world-size 0", "error: --world-size: must be a positive integer, got 0"},
      {"estimate --model toy --world-size 4 --nodes 0", "error: --nodes: must be a positive integer, got 0"},
      {"estimate --params 0 --world-size 4", "error: estimate --params \"0\": expected a positive whole number of "
                                             "parameters such as 124439808, 1.5e9, 350m or 7b"},
  };
  for (const auto& [args, expected] : cases) {
    INFO(args);
    auto r = zerotrain(args);
    CHECK(r.code == 2);
    CHECK(r.err.rfind(expected, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
    CHECK_FALSE(contains(r.err, "e+308"));  // no floating-point range
  }
  auto ok = zerotrain("--config zero2 --steps 3 --print-config --world-size 2");
  CHECK(ok.code == 0);
  CHECK(nlohmann::json::parse(ok.out)["training"]["steps"] == 3);
}

TEST_CASE("command-line errors exit 2") {
  CHECK(zerotrain("--no-such-flag").code == 2);
  auto world = zerotrain("--world-size 4");  // only with --print-config or --dry-run
  CHECK(world.code == 2);
  CHECK(contains(world.err, "--world-size: only with --print-config or --dry-run"));
  CHECK(zerotrain("--print-config --log-level loud").code == 2);
  auto set = zerotrain("--print-config --set nonsense");
  CHECK(set.code == 2);
  CHECK(contains(set.err, "--set nonsense: expected KEY=VALUE"));
}

TEST_CASE("the Hugging Face Trainer's arguments set the keys they stand for, --name value or --name=value") {
  const std::string trainer = "--deepspeed zero3 --model_name_or_path llama-tiny --learning_rate 2e-5 "
                              "--num_train_epochs=0.5 --per-device-train-batch-size 2 --gradient_accumulation_steps 2 "
                              "--warmup_ratio 0.1 --weight_decay=0.01 --adam_beta1 0.85 --adam_beta2 0.98 "
                              "--adam_epsilon 1e-6 --max_grad_norm 0.5 --logging_steps 5 --save_steps 50 "
                              "--save_total_limit 2 --eval_steps 25 --seed 42 --bf16 false --fp16 --output_dir out "
                              "--gradient_checkpointing --ddp_timeout 900 --print-config";
  const std::string keys = "--config zero3 --model llama-tiny --set training.lr=2e-5 --set training.epochs=0.5 "
                           "--set training.micro_batch_size=2 --set training.gradient_accumulation_steps=2 "
                           "--set training.warmup_ratio=0.1 --set training.weight_decay=0.01 "
                           "--set training.adam_beta1=0.85 --set training.adam_beta2=0.98 "
                           "--set training.adam_epsilon=1e-6 --set training.max_grad_norm=0.5 "
                           "--set training.logging_steps=5 --set training.save_interval=50 --set training.keep_last=2 "
                           "--set training.eval_interval=25 --set training.eval_strategy=steps --set training.seed=42 "
                           "--set bf16.enabled=false "
                           "--set fp16.enabled=true --set training.checkpoint_dir=out/checkpoints "
                           "--set training.metrics=out/metrics.jsonl --set training.save_final=out "
                           "--set training.gradient_checkpointing=true --set training.comm_timeout=900 --print-config";
  auto a = zerotrain(trainer), b = zerotrain(keys);
  INFO(a.err);
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(a.out == b.out);
  const auto j = nlohmann::json::parse(a.out);
  CHECK(j["optimizer"]["params"]["betas"] == nlohmann::json({0.85, 0.98}));
  CHECK(j["fp16"]["enabled"] == true);
  CHECK(contains(a.err, "--learning_rate 2e-5 = training.lr 2e-05; --num_train_epochs 0.5 = training.epochs 0.5;"));
  // --steps and --max_steps are one setting; so are --model and --model_name_or_path.
  CHECK(zerotrain("--steps 3 --max_steps 4 --print-config").err ==
        "error: --steps and --max_steps both give training.steps (expected one of them)\n");
  CHECK(zerotrain("--model toy --model_name_or_path toy --print-config").code == 2);
  CHECK(contains(zerotrain("--help").out, "--learning_rate"));
}

TEST_CASE("a near miss of any option gets the option it most likely meant") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--lr 3e-4", "--lr: unknown option; did you mean --learning_rate?"},
      {"--learning-rat=3e-4", "--learning-rat: unknown option; did you mean --learning_rate?"},
      {"--num_epochs 3", "--num_epochs: unknown option; did you mean --num_train_epochs?"},
      {"--epochs 3", "--epochs: unknown option; did you mean --num_train_epochs?"},
      {"--modelname toy", "--modelname: unknown option; did you mean --model_name_or_path?"},
      {"--batch_size 4", "--batch_size: unknown option; did you mean --per_device_train_batch_size?"},
      {"--dryrun", "--dryrun: unknown option; did you mean --dry-run?"},
      {"--stesp 3", "--stesp: unknown option; did you mean --steps?"},
      {"--deepspeed_confg zero2", "--deepspeed_confg: unknown option; did you mean --deepspeed_config?"},
      {"export ckpt -o out --dtyp bf16", "--dtyp: unknown option; did you mean --dtype?"},
  };
  for (const auto& [args, expected] : cases) {
    INFO(args);
    auto r = zerotrain(args);
    CHECK(r.code == 2);
    CHECK(r.err == "error: " + expected + " (run with --help for usage)\n");
  }
  // Spelt with dashes or underscores, as the Trainer's parser and zerotrain's take them.
  CHECK(zerotrain("--learning-rate 2e-5 --dry_run --world_size 2 --print_config").code == 0);
}

TEST_CASE("the Trainer's arguments that change nothing here are accepted with a warning saying why") {
  auto r = zerotrain("--config zero2 --print-config --do_train "
                     "--per_device_eval_batch_size 8");
  CHECK(r.code == 0);
  CHECK(r.out == zerotrain("--config zero2 --print-config").out);
  CHECK(contains(r.err, "warning: --do_train is ignored: zerotrain always trains\n"));
  CHECK(contains(r.err, "warning: --per_device_eval_batch_size 8 is ignored: evaluation reads windows of "
                        "per_device_train_batch_size sequences"));
}

TEST_CASE("TRL's and LLaMA-Factory's flags set the lora and data keys; --report_to and --logging_dir TensorBoard's") {
  const std::string model = "--config zero2 --model llama-tiny --print-config ";
  auto trl = zerotrain(model + "--use_peft --lora_r 4 --lora_dropout=0.1 --lora_target_modules q_proj v_proj "
                               "--packing --max_length 64");
  INFO(trl.err);
  REQUIRE(trl.code == 0);
  CHECK(trl.out ==
        zerotrain(model + "--set lora.enabled=true --set lora.r=4 --set lora.alpha=32 --set lora.dropout=0.1 "
                          "--set 'lora.target_modules=[\"q_proj\",\"v_proj\"]' --set data.packing=pack "
                          "--set data.seq_len=64")
            .out);
  auto llama_factory = zerotrain(model + "--finetuning_type lora --lora_rank 16 --lora_target all --cutoff_len 32");
  REQUIRE(llama_factory.code == 0);
  CHECK(llama_factory.out == zerotrain(model + "--set lora.r=16 --set lora.alpha=32 --set lora.dropout=0 "
                                               "--set 'lora.target_modules=[\"all-linear\"]' --set data.seq_len=32")
                                 .out);
  auto trl_alone = zerotrain(model + "--lora_r 16");
  CHECK(trl_alone.code == 2);
  CHECK(
      contains(trl_alone.err, "--lora_r 16: LoRA settings without LoRA (TRL trains the whole model unless --use_peft"));
  // --lora_rank is known now, and a near miss of the lora_ family is told that family.
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--lora_rnk 8", "--lora_rnk: unknown option; did you mean --lora_rank?"},
           {"--lora_dropuot 0.1", "--lora_dropuot: unknown option; did you mean --lora_dropout?"},
           {"--local_rnk 0", "--local_rnk: unknown option; did you mean --local_rank?"}}) {
    auto r = zerotrain(args);
    CHECK(r.err == "error: " + expected + " (run with --help for usage)\n");
  }
  auto tb = zerotrain("--config zero2 --print-config --report_to tensorboard wandb --logging_dir out/tb");
  REQUIRE(tb.code == 0);
  const auto j = nlohmann::json::parse(tb.out);
  CHECK(j["tensorboard"]["enabled"] == true);
  CHECK(j["tensorboard"]["output_path"] == "out");
  CHECK(j["tensorboard"]["job_name"] == "tb");
  CHECK(contains(tb.err, "warning: --report_to tensorboard,wandb: wandb is not available here"));
  CHECK(contains(tb.err, "TensorBoard: events in out/tb (the Trainer's logging_dir)"));
  CHECK(zerotrain("--config zero2 --print-config --report_to mlflowx").code == 2);
  CHECK(contains(zerotrain("--config zero2 --print-config --logging_dir runs").err,
                 "warning: --logging_dir runs: nothing is written there without --report_to tensorboard"));
}

TEST_CASE("--overwrite_output_dir is training.overwrite: a run starts afresh over an earlier one") {
  auto r = zerotrain("--config zero2 --print-config --overwrite_output_dir");
  CHECK(r.code == 0);
  CHECK(contains(r.out, "\"overwrite\": true"));
  CHECK(zerotrain("--config zero2 --print-config --overwrite_output_dir false").out ==
        zerotrain("--config zero2 --print-config").out);
  CHECK_FALSE(contains(r.err, "ignored"));
}

TEST_CASE("estimate prints the table; GPT-2 1.5B on 8 ranks is 23.21 GiB at stage 0") {
  auto r = zerotrain("estimate --model gpt2-1.5b --world-size 8");
  CHECK(r.code == 0);
  CHECK(contains(r.out, "23.21"));
  CHECK(contains(r.out, "16Ψ"));
  CHECK(contains(r.out, "4Ψ + 12Ψ/N"));
  CHECK(contains(r.out, "optimizer+params"));
  auto p = zerotrain("estimate --params 1.5e9 --world-size 16 --nodes 2 --dtype fp32");
  CHECK(p.code == 0);
  CHECK(contains(p.out, "2 nodes"));
  CHECK(zerotrain("estimate --model toy --params 5 --world-size 2").code == 2);
  CHECK(zerotrain("estimate --world-size 2").code == 2);
  CHECK(zerotrain("estimate --params 100 --world-size 6 --nodes 4").code == 2);
  CHECK(zerotrain("estimate --model no-such-model --world-size 2").code == 2);
}

TEST_CASE("estimate --autoep-size splits a model's experts over groups of ranks; a model without experts is refused") {
  auto r = zerotrain("estimate --model qwen3-moe-tiny --world-size 4 --autoep-size 2");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "M = 2 ranks holding the same experts"));
  CHECK(contains(r.out, "2Ψ + 14Ψ/N + 2Ψ' + 14Ψ'/M"));
  auto dense = zerotrain("estimate --model qwen3-tiny --world-size 4 --autoep-size 2");
  CHECK(dense.code == 2);
  CHECK(contains(dense.err, "estimate --autoep-size 2: the model (qwen3-tiny) has no experts"));
  CHECK(zerotrain("estimate --model qwen3-moe-tiny --world-size 4 --autoep-size 3").code == 2);
  CHECK(zerotrain("estimate --params 7b --world-size 4 --autoep-size 2").code == 2);
}

TEST_CASE("estimate: the world size defaults to the launcher's, else 1, and says which") {
  auto alone = zerotrain("estimate --model gpt2-1.5b", "-u SLURM_NTASKS");
  CHECK(alone.code == 0);
  CHECK(alone.out.rfind("world size 1: no launcher's world size in the environment (--world-size N for N ranks)\n",
                        0) == 0);
  CHECK(contains(alone.out, "N = 1 ranks"));
  auto torchrun = zerotrain("estimate --model gpt2-1.5b", "-u SLURM_NTASKS WORLD_SIZE=8");
  CHECK(torchrun.code == 0);
  CHECK(torchrun.out.rfind("world size 8 from WORLD_SIZE (--world-size N for another)\n", 0) == 0);
  CHECK(contains(torchrun.out, "23.21"));  // stage 0 of GPT-2 1.5B, as with --world-size 8
  auto bad = zerotrain("estimate --model toy", "-u SLURM_NTASKS WORLD_SIZE=lots");
  CHECK(bad.code == 2);
  CHECK(bad.err == "error: WORLD_SIZE=\"lots\": not a world size (expected a positive integer); give --world-size\n");
}

TEST_CASE("estimate --params takes 7b, 350m, 1.5e9; a bad count is one clear line") {
  for (const auto& [text, count] : std::vector<std::pair<std::string, std::string>>{
           {"7b", "7000000000"}, {"7B", "7000000000"}, {"350m", "350000000"}, {"1.5e9", "1500000000"},
           {"1.5b", "1500000000"}, {"124439808", "124439808"}, {"125k", "125000"}, {"1t", "1000000000000"}}) {
    INFO(text);
    auto r = zerotrain("estimate --world-size 8 --params " + text);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "Ψ = " + count + " parameters"));
  }
  for (const std::string bad : {"7x", "2.5", "-3", "b", "1e-4k", "0.5", "7bb", "nan", "1e30"}) {
    INFO(bad);
    auto r = zerotrain("estimate --world-size 8 --params '" + bad + "'");
    CHECK(r.code == 2);
    CHECK(r.err.rfind("error: estimate --params \"" + bad + "\": expected a positive whole number of parameters", 0) ==
          0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  auto layer = zerotrain("estimate --world-size 8 --params 7b --largest-layer 12q");
  CHECK(layer.code == 2);
  CHECK(layer.err.rfind("error: estimate --largest-layer \"12q\": expected", 0) == 0);
}

TEST_CASE("estimate shows DeepSpeed's figures beside its own, and why they differ") {
  auto r = zerotrain("estimate --params 7b --largest-layer 131072000 --world-size 8");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(contains(r.out, "DeepSpeed's estimators for the same model"));
  CHECK(contains(r.out, "largest layer L = 131072000 parameters (--largest-layer)"));
  // zero3 without offload, zero_init: 4L + 18Ψ/8 = 524288000 + 15750000000 bytes = 15.16 GiB per GPU;
  // host 4L·8·1.5 = 6291456000 bytes = 5.86 GiB per node.
  std::vector<std::string> words;
  const size_t at = r.out.find("\nzero3      none           none               1 ");
  REQUIRE(at != std::string::npos);
  std::istringstream line(r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1));
  for (std::string w; line >> w;) words.push_back(w);
  CHECK(words == std::vector<std::string>{"zero3", "none", "none", "1", "15.16", "5.86"});
  CHECK(contains(r.out, "Why the figures differ: DeepSpeed counts 18 bytes per parameter"));
  auto model = zerotrain("estimate --model gpt2-124m --world-size 2");
  CHECK(model.code == 0);
  // GPT-2's largest module is its token embedding, 50257 x 768.
  CHECK(contains(model.out, "largest layer L = 38597376 parameters (the model's largest module)"));
}

TEST_CASE("export: what is not a checkpoint is named, and the arguments are checked") {
  const std::string missing = (scratch() / "no-such-checkpoint").string();
  auto r = zerotrain("export " + missing + " -o " + (scratch() / "out").string());
  CHECK(r.code == 1);
  CHECK(r.err.rfind("error: export: " + missing + ": no such checkpoint directory", 0) == 0);
  CHECK_FALSE(fs::exists(scratch() / "out" / "model.safetensors"));
  CHECK(zerotrain("export ckpt").code == 2);                      // -o is required
  CHECK(zerotrain("export ckpt -o out --dtype fp8").code == 2);  // fp32, bf16 or fp16
  r = zerotrain("export ckpt -o out --max-shard-size 5XB");
  CHECK(r.code == 2);
  CHECK(contains(r.err, "--max-shard-size: \"5XB\" is not a size"));
}

TEST_CASE("--dry-run --world-size N plans as if N ranks were launched") {
  auto r = zerotrain("--config zero2 --dry-run --world-size 8");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(contains(r.out, "memory plan per rank: ZeRO stage 2, 8 ranks, bf16"));
  // Stage 2 on 8 ranks: gradients 2Ψ/8, optimizer 12Ψ/8 of the padded Ψ; on 1 rank 2Ψ and 12Ψ.
  auto one = zerotrain("--config zero2 --dry-run");
  REQUIRE(one.code == 0);
  CHECK(contains(one.out, "ZeRO stage 2, 1 ranks") == false);
  CHECK(contains(one.out, "memory plan per rank: ZeRO stage 2, 1 rank, bf16"));
  CHECK(r.out != one.out);
}

TEST_CASE("--dry-run of the mixture-of-experts presets counts every expert, and the parameters a token uses") {
  // transformers' counts for these configs; active: less the experts a token is not routed to.
  const struct {
    const char* preset;
    const char* total;
    const char* active;
  } presets[] = {{"olmoe-1b-7b", "6919161856", "1282017280 per token (8 of 64 experts in 16 layers)"},
                 {"mixtral-8x7b", "46702792704", "12879925248 per token (2 of 8 experts in 32 layers)"},
                 {"qwen3-30b-a3b", "30532122624", "3353032704 per token (8 of 128 experts in 48 layers)"}};
  for (const auto& p : presets) {
    auto r = zerotrain(std::string("--model ") + p.preset +
                       " --config zero3 --set data.seq_len=1024 --dry-run --world-size 8");
    INFO(p.preset << ": " << r.err);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, std::string("parameters Ψ = ") + p.total + " "));
    CHECK(contains(r.out, std::string("active A = ") + p.active));
  }
  auto dense = zerotrain("--model qwen3-0.6b --config zero3 --set data.seq_len=1024 --dry-run");
  REQUIRE(dense.code == 0);
  CHECK_FALSE(contains(dense.out, "active A"));
}

namespace {

// The number after `key` on the first line of `text` holding it (0 when none does).
double number_after(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  return at == std::string::npos ? 0.0 : std::stod(text.substr(at + key.size()));
}

// The model states --dry-run prints, in bytes: its formula evaluated (Ψ the padded flat buffer, N
// the ranks, F the parameters kept in fp32), and the sum of its params, grads and optimizer lines.
std::pair<double, double> plan_formula_and_bytes(const std::string& out, double N) {
  const double psi = number_after(out, "flat buffer padded to "), F = number_after(out, "kept in fp32 F = ");
  const size_t at = out.find("formula ");
  const std::string formula = out.substr(at + 8, out.find('\n', at) - at - 8);
  double value = 0;
  std::istringstream terms(formula);
  for (std::string term; terms >> term;) {
    if (term == "+") continue;
    const double k = std::stod(term);
    const std::string unit = term.substr(term.find_first_not_of("0123456789."));
    value += unit == "Ψ" ? k * psi : unit == "Ψ/N" ? k * psi / N : unit == "F" ? k * F : -1e30;
  }
  double bytes = 0;
  for (const char* line : {"  params ", "  grads ", "  optimizer "}) {
    const size_t l = out.find(line);
    bytes += number_after(out.substr(out.find('(', l)), "(");
  }
  return {value, bytes};
}

}  // namespace

TEST_CASE("--dry-run's formula counts the parameters kept in fp32, as its bytes do") {
  for (const char* config : {"zero0", "zero2", "zero3"}) {
    INFO(config);
    const std::string run =
        std::string("--model qwen3-30b-a3b --config ") + config + " --set data.seq_len=1024 --dry-run --world-size 8";
    auto kept = zerotrain(run + " --set data_types.keep_in_fp32_modules=auto");
    INFO(kept.err);
    REQUIRE(kept.code == 0);
    CHECK(number_after(kept.out, "kept in fp32 F = ") == 48.0 * 128 * 2048);  // 48 routers [128, 2048]
    const auto [formula, bytes] = plan_formula_and_bytes(kept.out, 8);
    CHECK(formula == bytes);
    auto plain = zerotrain(run);
    REQUIRE(plain.code == 0);
    CHECK_FALSE(contains(plain.out, "kept in fp32"));
    const auto [plain_formula, plain_bytes] = plan_formula_and_bytes(plain.out, 8);
    CHECK(plain_formula == plain_bytes);
    CHECK(bytes > plain_bytes);
  }
}

TEST_CASE("ranks started by torchrun or the deepspeed launcher are refused with what to use instead") {
  auto r = zerotrain("--config zero2 --steps 1", "RANK=1 WORLD_SIZE=4 LOCAL_RANK=1");
  CHECK(r.code == 2);
  CHECK(contains(r.err, "RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 are set"));
  CHECK(contains(r.err, "scripts/launch.sh -n 4 -- zerotrain"));
  CHECK(contains(r.err, "mpirun -np 4 / srun -n 4"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line, before any training
  // A world of one is one process whatever started it.
  auto one = zerotrain("--config zero2 --steps 1", "RANK=0 WORLD_SIZE=1 LOCAL_RANK=0");
  CHECK(one.code == 0);
}

TEST_CASE("without a scheduler block, training.warmup_steps is the warmup of the Trainer's linear schedule") {
  auto r = zerotrain("--print-config --set training.warmup_steps=50");
  CHECK(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["scheduler"].is_null());
  CHECK(j["training"]["lr_scheduler_type"] == "linear");
  CHECK(j["training"]["warmup_steps"] == 50);
  CHECK_FALSE(contains(r.err, "warmup_steps"));
  // With a scheduler that takes it ("auto"), the scheduler's warmup.
  auto with = zerotrain("--config zero2 --print-config --set training.warmup_steps=50");
  CHECK(with.code == 0);
  CHECK(nlohmann::json::parse(with.out)["scheduler"]["params"]["warmup_num_steps"] == 50);
  CHECK_FALSE(contains(with.err, "warmup_steps"));
  // With a constant learning rate, it would do nothing: an error.
  auto constant = zerotrain("--print-config --set training.warmup_steps=50 --set training.lr_scheduler_type=constant");
  CHECK(constant.code == 2);
  CHECK(contains(constant.err, "training.warmup_steps: 50 is not used: training.lr_scheduler_type is constant"));
}

TEST_CASE("plot: usage errors and unreadable metrics exit 2 with one message") {
  CHECK(contains(zerotrain("--help").out, "plot"));
  auto help = zerotrain("plot --help");
  CHECK(help.code == 0);
  CHECK(contains(help.out, "zerotrain plot zero1.jsonl zero3.jsonl -o curves.svg"));
  CHECK(zerotrain("plot -o x.svg").code == 2);                   // no metrics file
  CHECK(zerotrain("plot a.jsonl").code == 2);                    // no -o
  const std::string missing = (scratch() / "missing.jsonl").string();
  auto r = zerotrain("plot '" + missing + "' -o '" + (scratch() / "x.svg").string() + "'");
  CHECK(r.code == 2);
  CHECK(r.err == "error: plot: " + missing + ": cannot open: No such file or directory\n");
  auto bad = write_config("bad.jsonl", "{\"event\":\"setup\"}\nnot json\n");
  auto b = zerotrain("plot '" + bad + "' -o '" + (scratch() / "x.svg").string() + "'");
  CHECK(b.code == 2);
  CHECK(contains(b.err, bad + ":2: not a JSON record"));
  CHECK_FALSE(fs::exists(scratch() / "x.svg"));
}
