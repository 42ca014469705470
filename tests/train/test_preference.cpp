// Preference training against TRL's DPOTrainer (tests/fixtures/dpo, scripts/make_dpo_fixtures.py):
// a small Qwen3 and Llama 3 trained 8 steps on pairs with the reference log-probabilities precomputed,
// loss_type sigmoid, robust and ipo, with rpo_alpha's sft term (TRL's loss_type [.., "sft"]), and
// LoRA adapters as TRL + PEFT train them, with the reference of the adapters off; simpo without a reference as TRL's
// CPOTrainer trains it, orpo as TRL's ORPOTrainer does (with its nll_loss, log_odds_ratio and log_odds_chosen); at
// stages 0 and 3 on this world (1 or 2 ranks): each step's loss, gradient norm and rewards / logps
// metrics are TRL's, and the evaluation of validation pairs TRL's eval_loss. The reference of the
// adapters off is the precompute's for new adapters, TRL's adapters-disabled one for trained ones. A resumed run reads
// the reference its first run kept and goes on as TRL did; the reference of other data is refused. A reference model
// other than the policy's start (TRL's ref_model), full fine-tuning and LoRA: its log-probabilities are TRL's, and a
// resume with another reference is refused. A small Qwen3-MoE in TRL's micro-batches: the loss includes the
// load-balancing loss under TRL's rules (DPOTrainer: whenever its coefficient is not 0; ORPOTrainer: with
// output_router_logits), and aux_loss is DPOTrainer's.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "adamw_block.hpp"
#include "comm/control_channel.hpp"
#include "config/config.hpp"
#include "core/json_file.hpp"
#include "mpi_world.hpp"
#include "step_records.hpp"
#include "train/preference.hpp"
#include "train/trainer.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(ZT_SOURCE_DIR) / "tests" / "fixtures" / "dpo";
const char* const kMetrics[] = {"rewards/chosen", "rewards/rejected", "rewards/accuracies",
                                "rewards/margins", "logps/chosen",   "logps/rejected"};
const char* const kOrpoMetrics[] = {"nll_loss", "log_odds_ratio", "log_odds_chosen"};

nlohmann::json reference_of(const std::string& name) {
  return nlohmann::json::parse(std::ifstream(kFixtures / name / "reference.json"));
}

// The fixture's preference keys, with its reference model directory when it has one (TRL's ref_model).
nlohmann::json with_ref_model(const std::string& name, const nlohmann::json& r) {
  nlohmann::json p = r.at("preference");
  if (r.contains("ref_model") && !r.at("ref_model").is_null())
    p["reference"] = (kFixtures / name / r.at("ref_model").get<std::string>()).string();
  return p;
}

// The fixture's run on this world: each step's pairs split over the ranks and `accumulation`
// micro-batches.
nlohmann::json run_json(const std::string& name, const nlohmann::json& r, int stage, int accumulation) {
  const int W = world().world_size();
  const fs::path fixtures = kFixtures.parent_path();
  const std::string model = (r.contains("model_dir") && !r.at("model_dir").is_null()
                                 ? fixtures / r.at("model_dir").get<std::string>()
                                 : fixtures / "lora" / r.at("model").get<std::string>() / "base")
                                .string();
  return {{"train_micro_batch_size_per_gpu", r.at("pairs_per_step").get<int>() / W / accumulation},
          {"gradient_accumulation_steps", accumulation},
          {"gradient_clipping", r.at("clip")},
          {"optimizer", adamw_block([&](const char* name) { return r.at(name); })},
          {"zero_optimization", {{"stage", stage}}},
          {"model", {{"path", model}}},
          {"data",
           {{"train", (kFixtures / name / "pairs.bin").string()}, {"seq_len", r.at("max_length")}, {"shuffle", false}}},
          {"preference", with_ref_model(name, r)},
          {"training",
           {{"steps", r.at("steps")}, {"eval_interval", 0}, {"lr_scheduler_type", "constant"}, {"init_from", model}}}};
}

// A LoRA case: PEFT's adapters from the fixture's init_adapter.
nlohmann::json with_lora(nlohmann::json raw, const std::string& name, const nlohmann::json& r) {
  if (!r.contains("lora") || r.at("lora").is_null()) return raw;
  raw["lora"] = r.at("lora");
  raw["lora"]["init_from"] = (kFixtures / name / "init_adapter").string();
  return raw;
}

config::Config resolve(const nlohmann::json& raw) {
  config::ResolveOptions options;
  options.world_size = world().world_size();
  return config::resolve_config(raw, options, "preference.json");
}

// Fixture `name`'s run at stage 3 for `steps` steps, its last one saved in dir/first.
nlohmann::json first_run(const std::string& name, const nlohmann::json& r, const std::string& dir, int steps) {
  nlohmann::json raw = run_json(name, r, 3, 1);
  raw["training"]["steps"] = steps;
  raw["training"]["save_interval"] = steps;
  raw["training"]["checkpoint_dir"] = dir + "/first";
  return raw;
}

// Trains the run `raw` to its end.
void train(const nlohmann::json& raw) {
  const config::Config c = resolve(raw);
  Trainer trainer(c, world());
  REQUIRE(trainer.run() == 0);
}

// The exit status of the run `raw` when its set-up refuses it (0: not refused).
int refused_status(const nlohmann::json& raw) {
  const config::Config c = resolve(raw);
  try {
    Trainer trainer(c, world());
  } catch (const SetupFailed& e) {
    return e.status;
  }
  return 0;
}

// Steps [first, first + steps.size()) of the metrics file against TRL's: the loss and the metrics
// within 1e-4 of TRL's value; a reward, β times a difference of log-probabilities (0 at the first
// step), within 1e-4 of β times the log-probabilities it is the difference of.
void check_steps(const std::vector<nlohmann::json>& steps, const nlohmann::json& r, size_t first) {
  const double beta = r.at("preference").at("beta");
  for (size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& want = r.at("steps_trl").at(first + i);
    const double logps = std::max(std::abs(want.at("logps/chosen").get<double>()),
                                  std::abs(want.at("logps/rejected").get<double>()));
    const double loss = steps[i].at("loss"), want_loss = want.at("loss");
    INFO("step " << first + i + 1 << ": loss " << loss << ", TRL " << want_loss);
    CHECK(std::abs(loss - want_loss) <= 1e-4 * std::abs(want_loss));
    const double norm = steps[i].at("grad_norm"), want_norm = want.at("grad_norm");
    INFO("grad norm " << norm << ", TRL " << want_norm);
    CHECK(std::abs(norm - want_norm) <= 1e-4 * want_norm);
    std::vector<std::string> keys(std::begin(kMetrics), std::end(kMetrics));
    if (r.at("preference").at("loss_type") == "orpo")
      keys.insert(keys.end(), std::begin(kOrpoMetrics), std::end(kOrpoMetrics));
    if (want.contains("aux_loss")) keys.push_back("aux_loss");  // DPOTrainer's, with experts
    for (const std::string& key : keys) {
      const double got = steps[i].at(key), expected = want.at(key);
      INFO(key << " " << got << ", TRL " << expected);
      // log_odds_chosen is a difference of log-odds of about the size of the logps.
      const double slack = key.starts_with("rewards/") && key != "rewards/accuracies" ? beta * logps
                           : key == "log_odds_chosen"                                ? logps
                                                                                     : 0.0;
      CHECK(std::abs(got - expected) <= 1e-4 * (std::abs(expected) + slack));
    }
  }
}

}  // namespace

TEST_CASE("Preference training as TRL's DPOTrainer: 8 steps, loss and metrics, at stages 0 and 3",
          "[trainer][preference][trl]") {
  REQUIRE(4 % world().world_size() == 0);
  for (const char* name : {"qwen3_sigmoid", "qwen3_robust", "qwen3_ipo", "llama3_sigmoid", "qwen3_lora",
                           "qwen3_lora_adapters_off", "llama3_lora", "qwen3_rpo", "llama3_rpo", "qwen3_simpo",
                           "llama3_simpo", "qwen3_orpo", "llama3_orpo", "qwen3_lora_orpo", "qwen3_ref_model",
                           "qwen3_lora_ref_model", "qwen3_moe_sigmoid", "qwen3_moe_quiet_sigmoid", "qwen3_moe_orpo"}) {
    const nlohmann::json r = reference_of(name);
    for (int stage : {0, 3}) {
      // Stage 3 with accumulation: the step's pairs over ranks and micro-batches alike. TRL's
      // micro-batches where it had them (a model with experts: the aux loss is each forward's own).
      const int pairs = r.at("pairs_per_step"), W = world().world_size();
      const int micro =
          r.contains("micro_pairs") && !r.at("micro_pairs").is_null() ? r.at("micro_pairs").get<int>() : 0;
      if (micro > 0 && (pairs / micro) % W != 0) continue;  // TRL's micro-batches do not split over this world
      const int accumulation = micro > 0 ? pairs / micro / W : stage == 3 && W * 2 <= pairs ? 2 : 1;
      DYNAMIC_SECTION(name << " at stage " << stage << ", accumulation " << accumulation) {
        const std::string dir = shared_dir("preference", std::string(name) + "-stage" + std::to_string(stage));
        nlohmann::json raw = with_lora(run_json(name, r, stage, accumulation), name, r);
        raw["training"]["metrics"] = dir + "/metrics.jsonl";
        if (std::string(name) == "llama3_rpo") {  // in TRL 1.16's spelling: [loss, "sft"] and loss_weights
          nlohmann::json& p = raw["preference"];
          p["loss_weights"] = {1.0, p.at("rpo_alpha")};
          p["loss_type"] = {p.at("loss_type"), "sft"};
          p.erase("rpo_alpha");
        }
        // Without a reference (simpo, orpo) no reference pass runs, so none is kept beside the checkpoints.
        const std::string loss_type = r.at("preference").at("loss_type");
        const bool reference_free = loss_type == "simpo" || loss_type == "orpo";
        if (reference_free) raw["training"]["checkpoint_dir"] = dir + "/checkpoints";
        const bool evaluates = r.contains("evaluation") && !r.at("evaluation").is_null();
        if (evaluates) {  // the same pairs as validation data, evaluated after the last step
          raw["data"]["val"] = raw["data"]["train"];
          raw["training"]["eval_interval"] = r.at("steps");
        }
        // DPO turns the load-balancing loss on in the trained model only: the saved config.json keeps
        // output_router_logits false.
        const bool quiet = std::string(name) == "qwen3_moe_quiet_sigmoid";
        if (quiet) raw["training"]["save_final"] = dir + "/final";
        const config::Config c = resolve(raw);
        Trainer trainer(c, world());
        REQUIRE(trainer.run() == 0);
        if (quiet && world().rank() == 0)
          CHECK(nlohmann::json::parse(std::ifstream(dir + "/final/config.json")).at("output_router_logits") == false);
        if (reference_free) CHECK(!fs::exists(reference_logps_path(dir + "/checkpoints")));
        if (world().rank() == 0) {
          const auto steps = step_records(dir + "/metrics.jsonl");
          REQUIRE(steps.size() == r.at("steps_trl").size());
          check_steps(steps, r, 0);
          if (evaluates) {
            const auto evals = eval_records(dir + "/metrics.jsonl");
            REQUIRE(evals.size() == 1);
            const double loss = evals[0].at("val_loss"), want = r.at("evaluation").at("loss");
            INFO("val loss " << loss << ", TRL's eval_loss " << want);
            CHECK(std::abs(loss - want) <= 1e-4 * want);
            // The rewards over the validation pairs, as TRL's eval_rewards/*.
            for (const char* key : {"rewards/accuracies", "rewards/margins"}) {
              const double got = evals[0].at(key), trl = r.at("evaluation").at(key);
              INFO(key << " " << got << ", TRL's " << trl);
              CHECK(std::abs(got - trl) <= 1e-4 * std::abs(trl));
            }
          }
        }
      }
    }
  }
}

namespace {

using PairTable = std::vector<std::array<double, 2>>;  // a pair's chosen and rejected log-probabilities

// The kept reference file's log-probabilities of the pairs TRL keeps.
PairTable kept_pairs(const nlohmann::json& kept, const nlohmann::json& r) {
  PairTable out;
  for (int i = 0; i < r.at("kept_pairs").get<int>(); ++i)
    out.push_back({kept.at("logps").at(i).at(0).get<double>(), kept.at("logps").at(i).at(1).get<double>()});
  return out;
}

// The reference log-probabilities a one-step run of fixture `name` keeps with preference.reference
// `reference`, those of the pairs TRL keeps (rank 0; empty elsewhere).
PairTable kept_reference(const std::string& name, const std::string& reference) {
  const nlohmann::json r = reference_of(name);
  const std::string dir = shared_dir("preference", name + "-" + reference);
  nlohmann::json raw = with_lora(run_json(name, r, 3, 1), name, r);
  raw["preference"]["reference"] = reference;
  raw["training"]["steps"] = 1;
  raw["training"]["checkpoint_dir"] = dir;
  train(raw);
  if (world().rank() != 0) return {};
  return kept_pairs(read_json_file(reference_logps_path(dir)), r);
}

// The reference log-probabilities TRL precomputed for fixture `name`.
PairTable trl_reference(const std::string& name) {
  const nlohmann::json r = reference_of(name);
  PairTable out;
  for (const auto& p : r.at("ref_logps")) out.push_back({p.at(0).get<double>(), p.at(1).get<double>()});
  return out;
}

// Each pair's log-probabilities within `rel` of `want`'s (rel 0: not checked); how many differ by
// more than 1e-3.
int compare_logps(const PairTable& got, const PairTable& want, double rel) {
  int differ = 0;
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t k = 0; k < 2; ++k) {
      const double expected = want[i][k];
      if (rel > 0) {
        INFO("pair " << i << (k == 0 ? " chosen " : " rejected ") << got[i][k] << ", expected " << expected);
        CHECK(std::abs(got[i][k] - expected) <= rel * std::abs(expected));
      }
      differ += std::abs(got[i][k] - expected) > 1e-3 ? 1 : 0;
    }
  return differ;
}

}  // namespace

TEST_CASE("The reference of the adapters off: the precompute's for new adapters, the base model's for trained ones",
          "[trainer][preference][lora]") {
  // New adapters (B zero): the same log-probabilities either way, TRL's.
  const PairTable precompute = kept_reference("qwen3_lora", "precompute");
  const PairTable off = kept_reference("qwen3_lora", "adapters_off");
  if (world().rank() == 0) {
    compare_logps(off, precompute, 1e-12);
    compare_logps(off, trl_reference("qwen3_lora"), 1e-4);
  }
  // A trained adapter: adapters off is TRL's adapters-disabled reference, not the adapted model's.
  const PairTable trained_off = kept_reference("qwen3_lora_adapters_off", "adapters_off");
  const PairTable trained_precompute = kept_reference("qwen3_lora_adapters_off", "precompute");
  if (world().rank() == 0) {
    const PairTable trl = trl_reference("qwen3_lora_adapters_off");
    compare_logps(trained_off, trl, 1e-4);
    CHECK(compare_logps(trained_precompute, trl, 0) > 0);
  }
}

TEST_CASE("A resumed preference run reads the reference its first run kept; other data's is refused",
          "[trainer][preference][resume]") {
  const std::string name = "qwen3_sigmoid";
  const nlohmann::json r = reference_of(name);
  const std::string dir = shared_dir("preference", "resume");
  nlohmann::json raw = first_run(name, r, dir, 4);
  raw["training"]["metrics"] = dir + "/first.jsonl";
  train(raw);
  REQUIRE(fs::exists(reference_logps_path(dir + "/first")));
  // The whole run, resumed after step 4 into other checkpoints: TRL's steps 5-8 (a reference
  // computed again from step 4's weights would give other losses).
  raw["training"]["steps"] = 8;
  raw["training"]["resume"] = dir + "/first/step_00000004";
  raw["training"]["checkpoint_dir"] = dir + "/second";
  raw["training"]["metrics"] = dir + "/second.jsonl";
  const config::Config second = resolve(raw);
  {
    Trainer trainer(second, world());
    CHECK(trainer.start_step() == 4);
    REQUIRE(trainer.run() == 0);
  }
  CHECK(fs::exists(reference_logps_path(dir + "/second")));
  if (world().rank() == 0) {
    const auto steps = step_records(dir + "/second.jsonl");
    REQUIRE(steps.size() == 4);
    check_steps(steps, r, 4);
  }
  // The reference of other data: refused before any step, as bad input.
  if (world().rank() == 0) {
    nlohmann::json kept = read_json_file(reference_logps_path(dir + "/first"));
    kept["digest"] = "0";
    std::ofstream(reference_logps_path(dir + "/first")) << kept.dump();
  }
  world().control().barrier();
  raw["training"]["checkpoint_dir"] = dir + "/third";
  CHECK(refused_status(raw) == 2);
}

TEST_CASE("A reference model's log-probabilities are TRL's; its record refuses a resume with another reference",
          "[trainer][preference][resume]") {
  const std::string name = "qwen3_ref_model";
  const nlohmann::json r = reference_of(name);
  const std::string dir = shared_dir("preference", "ref-model-resume");
  nlohmann::json raw = first_run(name, r, dir, 2);
  train(raw);
  const fs::path model = kFixtures / name / "ref_model";
  if (world().rank() == 0) {
    const nlohmann::json kept = read_json_file(reference_logps_path(dir + "/first"));
    CHECK(kept.at("reference") == fs::absolute(model).lexically_normal().string());
    compare_logps(kept_pairs(kept, r), trl_reference(name), 1e-4);
  }
  // Resumed with the policy's own start as the reference: refused before any step, as bad input.
  raw["training"]["steps"] = 4;
  raw["training"]["resume"] = dir + "/first/step_00000002";
  raw["training"]["checkpoint_dir"] = dir + "/second";
  raw["preference"]["reference"] = "precompute";
  CHECK(refused_status(raw) == 2);
  CHECK(!fs::exists(dir + "/second/step_00000004"));
  // With the reference it started with, it goes on.
  raw["preference"]["reference"] = model.string();
  const config::Config same = resolve(raw);
  Trainer trainer(same, world());
  CHECK(trainer.start_step() == 2);
}

namespace {

// The first `samples` samples of a fixture's pairs cut to `max_length`: their tokens, the targets that
// count (the completion tokens: each follows a prompt token or another of its own), and Σ length².
StepTokens first_samples(const std::string& name, int samples, int max_length) {
  auto read = [&](const char* ext, size_t elem, size_t count) {
    std::ifstream f(kFixtures / name / (std::string("pairs.") + ext), std::ios::binary);
    f.seekg(256 * sizeof(int32_t));
    std::vector<char> bytes(elem * count);
    f.read(bytes.data(), std::streamsize(bytes.size()));
    return bytes;
  };
  std::vector<uint64_t> offsets(size_t(samples) + 1);
  const std::vector<char> idx = read("idx", sizeof(uint64_t), offsets.size());
  std::memcpy(offsets.data(), idx.data(), idx.size());
  const std::vector<char> mask = read("mask", 1, offsets.back());
  StepTokens t;
  for (int i = 0; i < samples; ++i) {
    const int64_t length = std::min<int64_t>(max_length, int64_t(offsets[size_t(i) + 1] - offsets[size_t(i)]));
    t.tokens += length;
    t.attended += length * length;
    for (int64_t k = 0; k < length; ++k) t.counted += mask[offsets[size_t(i)] + size_t(k)];
  }
  return t;
}

}  // namespace

TEST_CASE("MFU counts the LM head over the rows it computes, the completions' targets", "[trainer][preference][mfu]") {
  const std::string name = "qwen3_sigmoid";
  const nlohmann::json r = reference_of(name);
  const std::string dir = shared_dir("preference", "mfu");
  nlohmann::json raw = run_json(name, r, 0, 1);
  raw["training"]["steps"] = 1;
  raw["training"]["metrics"] = dir + "/metrics.jsonl";
  setenv("ZT_PEAK_TFLOPS", "1", 1);
  train(raw);
  unsetenv("ZT_PEAK_TFLOPS");
  if (world().rank() != 0) return;
  const nlohmann::json step = step_records(dir + "/metrics.jsonl").at(0);
  const int pairs = r.at("pairs_per_step");
  const StepTokens t = first_samples(name, 2 * pairs, r.at("max_length"));
  REQUIRE(step.at("tokens") == t.tokens);
  const Gpt model(resolve(raw).model.shape, 2, r.at("max_length").get<int>());
  const double head = double(model.head_flops_per_row());
  const double want = (double(model.flops_per_token(0)) - head) * double(t.tokens) + head * double(t.counted) +
                      double(model.flops_per_pair().full) * double(t.attended);
  const double got = step.at("mfu").get<double>() * step.at("step_ms").get<double>() / 1e3 *
                     world().world_size() * 1e12;
  INFO("step FLOPs " << got << ", expected " << want << " (" << t.counted << " of " << t.tokens
                     << " rows in the head)");
  CHECK(t.counted < t.tokens);
  CHECK(std::abs(got - want) <= 1e-6 * want);
}
