// Training from a Hugging Face model directory that transformers' save_pretrained wrote
// (tests/fixtures/hf, scripts/make_hf_dir_fixtures.py), on 2 ranks under mpirun: model.path gives
// the architecture, training.init_from the weights (sharded, fp32 and bf16), and the first step's
// loss is transformers' own on the same batch, at ZeRO stage 0 and at stage 3, where each rank
// reads only the bytes of its own shard of the parameters. Sliding-window directories (Mistral's
// window, Qwen2's use_sliding_window from max_window_layers on) over sequences three windows long
// train step by step as transformers' AdamW trains them, and the directory save_final writes
// starts where those steps ended. So do Gemma 2 (four norms a block, soft-capped attention and
// logits, GeGLU, even layers sliding) and Gemma 3 text (q/k norms, a rotary base per layer kind).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "../hf/hf_directory.hpp"
#include "adamw_block.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/config.hpp"
#include "config/model_block.hpp"
#include "data/token_file_writer.hpp"
#include "mpi_world.hpp"
#include "step_records.hpp"
#include "train/trainer.hpp"

using namespace zt;
using zt::test::world;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(ZT_SOURCE_DIR) / "tests" / "fixtures" / "hf";

nlohmann::json reference_of(const std::string& name) {
  return nlohmann::json::parse(std::ifstream(kFixtures / (name + ".reference.json")));
}

// The reference's tokens as an llm.c token file (rank 0 writes it).
std::string write_tokens(const nlohmann::json& ref, const std::string& name, int vocab) {
  const fs::path dir = fs::path(ZT_BINARY_DIR) / "test-runs" / "hf-init";
  const std::string path = (dir / (name + ".bin")).string();
  if (world().rank() == 0) {
    fs::create_directories(dir);
    TokenFileWriter writer(path, vocab);
    writer.append(ref.at("tokens").get<std::vector<int32_t>>(), {});
    writer.finish();
  }
  world().control().barrier();
  return path;
}

// The `key` of each step a run's metrics file records, where it does.
std::vector<double> step_values(const fs::path& metrics, const char* key) {
  std::vector<double> values;
  for (const nlohmann::json& record : zt::test::step_records(metrics.string()))
    if (record.contains(key)) values.push_back(record.at(key));
  return values;
}

// A fixture directory, transformers' reference, its config.json and the reference's tokens as a file.
struct FixtureRun {
  std::string dir;
  nlohmann::json ref, source;
  std::string data;
};
FixtureRun fixture_run(const std::string& name) {
  FixtureRun f{(kFixtures / name).string(), reference_of(name), {}, {}};
  f.source = nlohmann::json::parse(std::ifstream(fs::path(f.dir) / "config.json"));
  f.data = write_tokens(f.ref, name, f.source.at("vocab_size"));
  return f;
}

// An empty directory for a run's outputs under build/test-runs/KIND (rank 0 makes it; every rank waits).
fs::path fresh_run_dir(const std::string& kind, const std::string& name, int stage) {
  const fs::path out = fs::path(ZT_BINARY_DIR) / "test-runs" / kind /
                       (name + "-stage" + std::to_string(stage) + "-np" + std::to_string(world().world_size()));
  if (world().rank() == 0) {
    fs::remove_all(out);
    fs::create_directories(out);
  }
  world().control().barrier();
  return out;
}

// One step of B x T on each of two windows: gradient accumulation over both, or a window per rank.
// `training` adds to the training block.
// `extra`: more top-level blocks.
config::Config make(const std::string& model_dir, const std::string& data, const nlohmann::json& ref, int stage,
                    const nlohmann::json& training = nlohmann::json::object(),
                    const nlohmann::json& extra = nlohmann::json::object()) {
  const int W = world().world_size();
  nlohmann::json raw = {
      {"train_micro_batch_size_per_gpu", ref.at("B")},
      {"gradient_accumulation_steps", 2 / W},
      {"zero_optimization", {{"stage", stage}}},
      {"model", {{"path", model_dir}}},
      {"data", {{"train", data}, {"seq_len", ref.at("T")}, {"shuffle", false}}},
      {"training", {{"steps", 1}, {"eval_interval", 0}, {"init_from", model_dir}}}};
  raw["training"].update(training);
  raw.update(extra);
  if (ref.contains("adamw")) {  // torch.optim.AdamW's settings, a constant learning rate
    const nlohmann::json& o = ref.at("adamw");
    raw["optimizer"] = test::adamw_block([&](const char* name) { return o.at(name); });
    raw["gradient_clipping"] = o.at("clip");
    raw["training"]["lr_scheduler_type"] = "constant";
  }
  config::ResolveOptions options;
  options.world_size = W;
  return config::resolve_config(raw, options, "hf_init.json");
}

}  // namespace

TEST_CASE("a save_pretrained directory trains from its weights: the first loss is transformers'", "[trainer][hf]") {
  REQUIRE(2 % world().world_size() == 0);
  for (const char* name : {"llama3_dir_fp32", "qwen2_dir_bf16"}) {
    const auto [dir, ref, source, data] = fixture_run(name);
    const double want = ref.at("loss");
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION(name << " at stage " << stage) {
        Trainer trainer(make(dir, data, ref, stage), world());
        const TrainStepResult first = trainer.train_step(1);
        INFO("loss " << first.loss << ", transformers " << want);
        CHECK(std::abs(first.loss - want) <= 1e-5 * want);
      }
    }
  }
}

TEST_CASE("sliding-window directories train step by step as transformers does, and their saved weights load back",
          "[trainer][hf][window]") {
  REQUIRE(2 % world().world_size() == 0);
  for (const char* name : {"mistral_swa_fp32", "qwen2_swa_fp32", "gemma2_swa_fp32", "gemma3_text_swa_fp32"}) {
    const auto [dir, ref, source, data] = fixture_run(name);
    const std::vector<double> want = ref.at("adamw").at("losses");
    REQUIRE(source.at("sliding_window").get<int>() * 3 == ref.at("T").get<int>());  // the window is a third
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION(name << " at stage " << stage) {
        const fs::path out = fresh_run_dir("hf-sliding", name, stage);
        const nlohmann::json training = {{"steps", want.size()},
                                         {"save_final", (out / "final").string()},
                                         {"metrics", (out / "m.jsonl").string()}};
        REQUIRE(Trainer(make(dir, data, ref, stage, training), world()).run() == 0);
        if (world().rank() == 0) {
          const std::vector<double> losses = step_values(out / "m.jsonl", "loss");
          REQUIRE(losses.size() == want.size());
          for (size_t k = 0; k < want.size(); ++k) {
            const double loss = losses[k];
            INFO("step " << k + 1 << ": loss " << loss << ", transformers " << want[k]);
            CHECK(std::abs(loss - want[k]) <= 1e-5 * want[k]);
          }
          // What transformers reads back: the same window and the same layers sliding.
          const nlohmann::json saved = nlohmann::json::parse(std::ifstream(out / "final" / "config.json"));
          for (const char* key : {"sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
                                  "rope_parameters", "query_pre_attn_scalar", "attn_logit_softcapping",
                                  "final_logit_softcapping", "hidden_activation", "architectures"}) {
            INFO(key);
            CHECK(saved.contains(key) == source.contains(key));
            if (source.contains(key)) CHECK(saved.at(key).dump() == source.at(key).dump());  // ints stay ints
          }
        }
        world().control().barrier();
        // The saved directory starts where the steps ended: its loss on the first step's windows.
        const std::string final_dir = (out / "final").string();
        Trainer again(make(final_dir, data, ref, stage), world());
        const double trained = ref.at("trained_loss");
        const TrainStepResult first = again.train_step(1);
        INFO("loss " << first.loss << ", transformers " << trained);
        CHECK(std::abs(first.loss - trained) <= 1e-5 * trained);
      }
    }
  }
}

// Each step's value within a relative 1e-5 of transformers'.
void check_steps(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("step " << k + 1 << ": " << what << " " << got[k] << ", transformers " << want[k]);
    CHECK(std::abs(got[k] - want[k]) <= 1e-5 * want[k]);
  }
}

// qwen3_moe_idle_fp32's micro-batches route fewer tokens than there are experts: on 2 ranks at
// stage 3 each rank leaves some expert without a token, the step completes, and its gradient (the
// norm of each step, and the losses after) is the one process's.
TEST_CASE("mixture-of-experts directories train step by step as transformers does, and their saved weights load back",
          "[trainer][hf][moe]") {
  REQUIRE(2 % world().world_size() == 0);
  for (const char* name :
       {"qwen3_moe_fp32", "qwen3_moe_aux_fp32", "qwen3_moe_idle_fp32", "qwen2_moe_fp32", "mixtral_fp32",
        "olmoe_fp32"}) {
    const auto [dir, ref, source, data] = fixture_run(name);
    const std::vector<double> want = ref.at("adamw").at("losses");
    const std::vector<double> want_aux = ref.value("aux_losses", std::vector<double>{});
    if (std::string(name) == "qwen3_moe_idle_fp32")  // the premise: experts idle in every micro-batch
      REQUIRE(ref.at("B").get<int>() * ref.at("T").get<int>() * source.at("num_experts_per_tok").get<int>() <
              source.at("num_local_experts").get<int>());
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION(name << " at stage " << stage) {
        const fs::path out = fresh_run_dir("hf-moe", name, stage);
        // At stage 3 the blocks are recomputed in backward (the experts' routing too).
        const nlohmann::json training = {{"steps", want.size()},
                                         {"save_final", (out / "final").string()},
                                         {"metrics", (out / "m.jsonl").string()},
                                         {"gradient_checkpointing", stage == 3}};
        REQUIRE(Trainer(make(dir, data, ref, stage, training), world()).run() == 0);
        if (world().rank() == 0) {
          check_steps(step_values(out / "m.jsonl", "loss"), want, "loss");
          check_steps(step_values(out / "m.jsonl", "grad_norm"), ref.at("adamw").at("grad_norms"), "grad norm");
          // recorded only with output_router_logits
          check_steps(step_values(out / "m.jsonl", "aux_loss"), want_aux, "aux loss");
          CHECK(step_values(out / "m.jsonl", "expert_load").size() == want.size());
          // The experts' keys as transformers reads them back.
          const nlohmann::json saved = nlohmann::json::parse(std::ifstream(out / "final" / "config.json"));
          CHECK(saved.at("architectures") == source.at("architectures"));
          for (const char* key : {"num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                                  "shared_expert_intermediate_size", "norm_topk_prob", "decoder_sparse_step",
                                  "mlp_only_layers", "output_router_logits", "router_aux_loss_coef", "qkv_bias"}) {
            INFO(key);
            CHECK(saved.contains(key) == source.contains(key));
            if (source.contains(key)) CHECK(saved.at(key) == source.at(key));
          }
        }
        world().control().barrier();
        // The saved directory starts where the steps ended, its experts under their own names.
        Trainer again(make((out / "final").string(), data, ref, stage), world());
        const double trained = ref.at("trained_loss");
        const TrainStepResult first = again.train_step(1);
        INFO("loss " << first.loss << ", transformers " << trained);
        CHECK(std::abs(first.loss - trained) <= 1e-5 * trained);
      }
    }
  }
}

// The same idle experts with the experts split over the ranks (expert_parallel): some expert gets
// no row from any rank of its group and some pieces of the all-to-all are empty; at stage 3 with
// recomputed blocks the steps complete with transformers' losses and gradient norms.
TEST_CASE("experts idle on every rank, split over the ranks at stage 3, train as transformers does",
          "[trainer][hf][moe][expert_parallel]") {
  const char* name = "qwen3_moe_idle_fp32";
  const auto [dir, ref, source, data] = fixture_run(name);
  const fs::path out = fresh_run_dir("hf-moe-ep", name, 3);
  const nlohmann::json training = {{"steps", ref.at("adamw").at("losses").size()},
                                   {"metrics", (out / "m.jsonl").string()},
                                   {"gradient_checkpointing", true}};
  const nlohmann::json ep = {{"expert_parallel", {{"enabled", true}, {"autoep_size", world().world_size()}}}};
  REQUIRE(Trainer(make(dir, data, ref, 3, training, ep), world()).run() == 0);
  if (world().rank() == 0) {
    check_steps(step_values(out / "m.jsonl", "loss"), ref.at("adamw").at("losses"), "loss");
    check_steps(step_values(out / "m.jsonl", "grad_norm"), ref.at("adamw").at("grad_norms"), "grad norm");
    for (const nlohmann::json& record : zt::test::step_records((out / "m.jsonl").string()))
      if (world().world_size() > 1) CHECK(record.at("comm").value("all_to_all", 0) > 0);  // rows travel
  }
  world().control().barrier();
}

// Evaluation of a model with experts as transformers' Trainer reports it (trainer_eval: every window
// of the reference's tokens, the directory's weights): with output_router_logits its eval_loss holds
// router_aux_loss_coef times each window's load-balancing loss, which the run's eval record keeps
// beside val_loss as aux_loss; without it, the cross-entropy alone.
TEST_CASE("a model with experts evaluates as transformers' Trainer, the load-balancing loss included",
          "[trainer][hf][moe]") {
  for (const char* name : {"qwen3_moe_aux_fp32", "qwen3_moe_fp32"}) {
    const auto [dir, ref, source, data] = fixture_run(name);
    const nlohmann::json& want = ref.at("trainer_eval");
    for (int stage : {0, 3}) {
      DYNAMIC_SECTION(name << " at stage " << stage) {
        const fs::path out = fresh_run_dir("hf-moe-eval", name, stage);
        const nlohmann::json training = {
            {"eval_interval", 1}, {"eval_batches", want.at("windows")}, {"metrics", (out / "m.jsonl").string()}};
        const nlohmann::json val = {
            {"data", {{"train", data}, {"val", data}, {"seq_len", ref.at("T")}, {"shuffle", false}}}};
        const config::Config config = make(dir, data, ref, stage, training, val);
        Trainer trainer(config, world());
        const double loss = trainer.evaluate(), want_loss = want.at("loss");
        INFO("val loss " << loss << ", the Trainer's eval_loss " << want_loss);
        CHECK(std::abs(loss - want_loss) <= 1e-5 * want_loss);
        REQUIRE(trainer.eval_aux_loss().has_value() == !want.at("aux_loss").is_null());
        if (trainer.eval_aux_loss()) {
          const double aux = *trainer.eval_aux_loss(), want_aux = want.at("aux_loss");
          INFO("aux loss " << aux << ", transformers' " << want_aux);
          CHECK(std::abs(aux - want_aux) <= 1e-5 * want_aux);
        }
        REQUIRE(trainer.run() == 0);
        if (world().rank() == 0) {
          const auto evals = zt::test::eval_records((out / "m.jsonl").string());
          REQUIRE(evals.size() == 1);
          CHECK(evals[0].contains("aux_loss") == !want.at("aux_loss").is_null());
        }
        world().control().barrier();
      }
    }
  }
}

// bf16 on the CPU stores the weights in bf16 and computes in fp32, the router's softmax and top-k
// included: where the fp32 routing is well separated (qwen2_moe_fp32's first two micro-batches,
// one per rank on 2: each token's second and third router logits 0.05 and 0.01 apart at the
// least, by transformers, the bf16 weights' rounding moving them by some 0.005), the bf16 step
// routes every token as the fp32 step does (the same load of the busiest expert, the
// load-balancing loss within its probabilities' rounding: a token routed elsewhere moves it by
// some 0.5%) and its loss is close.
TEST_CASE("a bf16 step of a model with experts on the CPU routes as the fp32 step", "[trainer][hf][moe]") {
  const auto [dir, ref, source, data] = fixture_run("qwen2_moe_fp32");
  auto first_step = [&](bool bf16) {
    const nlohmann::json extra = {{"gradient_accumulation_steps", 1}, {"bf16", {{"enabled", bf16}}}};
    Trainer trainer(make(dir, data, ref, 0, nlohmann::json::object(), extra), world());
    REQUIRE(trainer.engine().dtype() == (bf16 ? DType::BF16 : DType::F32));  // as the weights are stored
    return trainer.train_step(1);
  };
  const TrainStepResult fp32 = first_step(false), bf16 = first_step(true);
  INFO("loss fp32 " << fp32.loss << ", bf16 " << bf16.loss << "; aux fp32 " << *fp32.aux_loss << ", bf16 "
                    << *bf16.aux_loss << "; busiest expert fp32 " << *fp32.expert_load << ", bf16 "
                    << *bf16.expert_load);
  CHECK(bf16.loss != fp32.loss);  // the premise: bf16 weights
  CHECK(*bf16.expert_load == *fp32.expert_load);
  CHECK(std::abs(*bf16.aux_loss - *fp32.aux_loss) <= 1e-3 * *fp32.aux_loss);
  CHECK(std::abs(bf16.loss - fp32.loss) <= 1e-2 * fp32.loss);
}

// Freezing by name reaches the router and single experts (the load-balancing loss would move the
// router); LoRA adapts the attention of a model with experts, and refuses the experts.
TEST_CASE("a model with experts freezes its router and experts by name, and takes LoRA on its attention",
          "[trainer][hf][moe]") {
  const char* name = "qwen3_moe_aux_fp32";
  const auto [dir, ref, source, data] = fixture_run(name);
  const fs::path out = fresh_run_dir("hf-moe", "freeze", 3);
  const nlohmann::json frozen = {"model.layers.*.mlp.gate", "model.layers.0.mlp.experts.{0-1}"};
  REQUIRE(Trainer(make(dir, data, ref, 3,
                       {{"steps", 2}, {"freeze", frozen}, {"save_final", (out / "final").string()}}),
                  world())
              .run() == 0);
  if (world().rank() == 0) {
    const GptShape shape = config::resolve_model_argument(dir).shape;
    const std::vector<float> before = zt::test::read_hf_weights(dir, shape, "F32");
    const std::vector<float> after = zt::test::read_hf_weights((out / "final").string(), shape, "F32");
    for (const ParamGroup& g : make_gpt_layout(shape).groups)
      for (const TensorSpec& t : g.tensors) {
        const bool kept = std::equal(before.begin() + long(t.offset), before.begin() + long(t.offset + t.numel()),
                                     after.begin() + long(t.offset));
        const bool is_frozen = t.name.ends_with("mlp.gate.weight") ||
                               t.name.starts_with("model.layers.0.mlp.experts.0.") ||
                               t.name.starts_with("model.layers.0.mlp.experts.1.");
        INFO(t.name);
        if (is_frozen) CHECK(kept);
        if (t.name.find("experts.2.") != std::string::npos || t.name.find("q_proj") != std::string::npos)
          CHECK_FALSE(kept);  // trained
      }
  }
  world().control().barrier();

  // LoRA on q and v: B starts at zero, so the first step's loss is the base model's.
  const nlohmann::json lora = {{"enabled", true}, {"r", 4}, {"target_modules", {"q_proj", "v_proj"}}};
  Trainer adapted(make(dir, data, ref, 3, nlohmann::json::object(), {{"lora", lora}}), world());
  const double first = adapted.train_step(1).loss;
  const double want = ref.at("adamw").at("losses").at(0);
  INFO("loss " << first << ", transformers " << want);
  CHECK(std::abs(first - want) <= 1e-5 * want);
}
