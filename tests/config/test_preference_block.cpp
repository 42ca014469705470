// The preference block: TRL's DPOConfig names and defaults, its learning rate of 1e-6 where none is
// given, TRL's --beta / --loss_type / --label_smoothing / --simpo_gamma, orpo, --ref_model, and the
// values refused.
#include <filesystem>

#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("a preference block takes DPOConfig's defaults, and its learning rate where none is given") {
  const Config c = resolve(with({{"preference", json::object()}}));
  CHECK(c.preference.enabled);
  CHECK(c.preference.loss_type == PreferenceLoss::Sigmoid);
  CHECK(c.preference.beta == 0.1);
  CHECK(c.preference.label_smoothing == 0.0);
  CHECK(c.preference.rpo_alpha == 0.0);
  CHECK(c.preference.reference == PreferenceReferenceSource::Precompute);
  CHECK(c.preference.has_reference());
  CHECK(c.optimizer.lr == 1e-6);
  CHECK(!resolve(with({})).preference.enabled);
  CHECK(resolve(with({})).optimizer.lr == 5e-5);
  CHECK(resolve(with({{"preference", json::object()}, {"training", {{"lr", 2e-5}}}})).optimizer.lr == 2e-5);
  CHECK(!resolve(with({{"preference", {{"enabled", false}}}})).preference.enabled);
}

TEST_CASE("TRL's --beta, --loss_type and --label_smoothing set the preference block") {
  ResolveOptions o = world(1);
  o.trainer_arguments = {{"beta", "0.25"}, {"loss_type", "robust"}, {"label_smoothing", "0.1"}};
  const Config c = resolve(with({}), o);
  CHECK(c.preference.enabled);
  CHECK(c.preference.beta == 0.25);
  CHECK(c.preference.loss_type == PreferenceLoss::Robust);
  CHECK(c.preference.label_smoothing == 0.1);
  o.trainer_arguments = {{"loss_type", "simpo"}, {"simpo_gamma", "1.5"}};
  const Config simpo = resolve(with({}), o);
  CHECK(simpo.preference.loss_type == PreferenceLoss::Simpo);
  CHECK(simpo.preference.simpo_gamma == 1.5);
  CHECK(!simpo.preference.has_reference());
}

TEST_CASE("rpo_alpha adds the sft term to any loss; simpo takes simpo_gamma and no reference") {
  const Config rpo = resolve(with({{"preference", {{"loss_type", "ipo"}, {"rpo_alpha", 0.5}}}}));
  CHECK(rpo.preference.loss_type == PreferenceLoss::Ipo);
  CHECK(rpo.preference.rpo_alpha == 0.5);
  const Config simpo = resolve(with({{"preference", {{"loss_type", "simpo"}, {"beta", 2.0}}}}));
  CHECK(simpo.preference.simpo_gamma == 0.5);  // CPOConfig's default
  CHECK(simpo.preference.beta == 2.0);
}

TEST_CASE("orpo: no reference, its own NLL term (the chosen prompt's targets count), no sft beside it") {
  ResolveOptions o = world(1);
  o.trainer_arguments = {{"loss_type", "orpo"}, {"beta", "0.2"}};
  const Config c = resolve(with({}), o);
  CHECK(c.preference.loss_type == PreferenceLoss::Orpo);
  CHECK(c.preference.beta == 0.2);
  CHECK(!c.preference.has_reference());
  CHECK(c.preference.chosen_prompt_counts());
  CHECK(c.preference.nll_weight() == 1.0);
  CHECK(!resolve(with({{"preference", {{"loss_type", "simpo"}}}})).preference.chosen_prompt_counts());
  CHECK(resolve(with({{"preference", {{"rpo_alpha", 0.3}}}})).preference.nll_weight() == 0.3);
  CHECK(error_of(with({{"preference", {{"loss_type", "orpo"}, {"reference", "precompute"}}}})) ==
        "test.json: preference.reference: loss_type orpo compares against no reference");
  CHECK(error_of(with({{"preference", {{"loss_type", "orpo"}, {"rpo_alpha", 0.5}}}})) ==
        "test.json: preference.rpo_alpha: loss_type orpo has its own NLL term (of the whole chosen sequence): no "
        "sft term goes beside it");
  CHECK(error_of(with({{"preference", {{"loss_type", {"orpo", "sft"}}}}})) ==
        "test.json: preference.loss_type: loss_type orpo has its own NLL term (of the whole chosen sequence): no "
        "sft term goes beside it");
  CHECK(error_of(with({{"preference", {{"loss_type", "orpo"}, {"simpo_gamma", 1.0}}}})) ==
        "test.json: preference.simpo_gamma: applies to loss_type simpo, not orpo");
}

TEST_CASE("TRL 1.16's loss_type list: a preference loss and sft beside it, sft's loss_weights entry rpo_alpha") {
  const Config c = resolve(with({{"preference", {{"loss_type", {"ipo", "sft"}}, {"loss_weights", {1.0, 0.3}}}}}));
  CHECK(c.preference.loss_type == PreferenceLoss::Ipo);
  CHECK(c.preference.rpo_alpha == 0.3);
  CHECK(resolve(with({{"preference", {{"loss_type", {"sft", "sigmoid"}}}}})).preference.rpo_alpha == 1.0);
  CHECK(resolve(with({{"preference", {{"loss_type", {"simpo"}}}}})).preference.loss_type == PreferenceLoss::Simpo);
  CHECK(error_of(with({{"preference", {{"loss_type", {"sft"}}}}})) ==
        "test.json: preference.loss_type: sft needs a preference loss beside it (such as [\"sigmoid\", \"sft\"])");
  CHECK(error_of(with({{"preference", {{"loss_type", {"sigmoid", "ipo"}}}}})) ==
        "test.json: preference.loss_type: sigmoid and ipo: one preference loss at a time (sft may go beside it)");
  CHECK(error_of(with({{"preference", {{"loss_type", {"sigmoid", "hinge"}}}}})) ==
        "test.json: preference.loss_type: \"hinge\" is not valid (expected sigmoid, robust, ipo, simpo or orpo, or sft "
        "beside one of them)");
  CHECK(error_of(with({{"preference", {{"loss_type", {"sigmoid", "sft"}}, {"loss_weights", {0.5, 1.0}}}}})) ==
        "test.json: preference.loss_weights: sigmoid's weight is 0.5: the preference loss weighs 1 (only sft's "
        "weight, rpo_alpha, may differ)");
  CHECK(error_of(with({{"preference", {{"loss_type", {"sigmoid", "sft"}}, {"loss_weights", {1.0}}}}})) ==
        "test.json: preference.loss_weights: expected a list of 2 numbers, one for each of loss_type's");
  CHECK(error_of(with({{"preference", {{"loss_type", {"sigmoid", "sft"}}, {"loss_weights", {1.0, 0.5}},
                                       {"rpo_alpha", 0.5}}}})) ==
        "test.json: preference.rpo_alpha: given twice: as rpo_alpha and as loss_type sft's weight in loss_weights");
  CHECK(error_of(with({{"preference", {{"loss_weights", {1.0}}}}})) ==
        "test.json: preference.loss_weights: weighs the losses of a list loss_type (such as [\"sigmoid\", \"sft\"])");
}

TEST_CASE("the printed preference block resolves to itself, for every loss_type") {
  for (const json& block : {json{{"loss_type", "sigmoid"}, {"rpo_alpha", 0.5}},
                            json{{"loss_type", "robust"}, {"label_smoothing", 0.2}},
                            json{{"loss_type", "simpo"}, {"simpo_gamma", 1.0}},
                            json{{"loss_type", "orpo"}, {"beta", 0.2}}}) {
    const json once = to_json(resolve(with({{"preference", block}})));
    INFO(once["preference"].dump());
    CHECK(to_json(resolve(once)) == once);
  }
}

TEST_CASE("reference adapters_off takes a LoRA run's adapters off; without adapters it is refused") {
  const Config c = resolve(with({{"lora", json::object()}, {"preference", {{"reference", "adapters_off"}}}}));
  CHECK(c.preference.reference == PreferenceReferenceSource::AdaptersOff);
  CHECK(error_of(with({{"preference", {{"reference", "adapters_off"}}}})) ==
        "test.json: preference.reference: adapters_off needs LoRA adapters (a lora block) to turn off");
}

TEST_CASE("the preference block refuses what it does not compute") {
  CHECK(error_of(with({{"preference", {{"loss_type", "hinge"}}}})) ==
        "test.json: preference.loss_type: \"hinge\" is not valid (expected sigmoid, robust, ipo, simpo or orpo)");
  CHECK(error_of(with({{"preference", {{"beta", 0}}}})) ==
        "test.json: preference.beta: 0 is out of range (expected > 0)");
  CHECK(error_of(with({{"preference", {{"label_smoothing", 0.1}}}})) ==
        "test.json: preference.label_smoothing: applies to loss_type robust (TRL's conservative DPO), not sigmoid");
  CHECK(error_of(with({{"preference", {{"loss_type", "robust"}, {"label_smoothing", 0.5}}}})).find(
            "preference.label_smoothing: 0.5 is out of range") != std::string::npos);
  CHECK(error_of(with({{"preference", {{"loss_type", "simpo"}, {"label_smoothing", 0.1}}}})) ==
        "test.json: preference.label_smoothing: applies to loss_type robust (TRL's conservative DPO), not simpo");
  CHECK(error_of(with({{"preference", {{"simpo_gamma", 1.0}}}})) ==
        "test.json: preference.simpo_gamma: applies to loss_type simpo, not sigmoid");
  CHECK(error_of(with({{"preference", {{"loss_type", "simpo"}, {"reference", "precompute"}}}})) ==
        "test.json: preference.reference: loss_type simpo compares against no reference");
  CHECK(error_of(with({{"preference", {{"rpo_alpha", -1}}}})).find("preference.rpo_alpha: -1 is out of range") !=
        std::string::npos);
}

namespace {

const std::string kLoraFixtures = std::string(ZT_SOURCE_DIR) + "/tests/fixtures/lora";

// A config whose policy is the tiny Qwen3 directory, with `preference`.
json qwen3_with(const json& preference) {
  return with({{"model", {{"path", kLoraFixtures + "/qwen3/base"}}}, {"preference", preference}});
}

}  // namespace

TEST_CASE("reference: a model directory of the policy's architecture, also as --ref_model; printed as given") {
  const std::string dir = kLoraFixtures + "/qwen3/merged";
  const Config c = resolve(qwen3_with({{"reference", dir}}));
  CHECK(c.preference.reference == PreferenceReferenceSource::Model);
  CHECK(c.preference.reference_model == dir);
  const json printed = to_json(c);
  CHECK(printed["preference"]["reference"] == dir);
  CHECK(to_json(resolve(printed)) == printed);
  ResolveOptions o = world(1);
  o.trainer_arguments = {{"ref_model", dir}};
  const Config flag = resolve(with({{"model", {{"path", kLoraFixtures + "/qwen3/base"}}}}), o);
  CHECK(flag.preference.enabled);
  CHECK(flag.preference.reference_model == dir);
}

TEST_CASE("reference: a directory that is no model, or a model of another architecture, is refused in one line") {
  const std::string missing = kLoraFixtures + "/none";
  CHECK(error_of(qwen3_with({{"reference", missing}})) ==
        "test.json: preference.reference: " + missing +
            ": no such directory (expected precompute, adapters_off or a Hugging Face model directory)");
  const std::string adapter = kLoraFixtures + "/qwen3/init_adapter";
  CHECK(error_of(qwen3_with({{"reference", adapter}})) ==
        "test.json: preference.reference: " + adapter +
            ": not a model directory (expected config.json and model.safetensors or its index, as save_pretrained "
            "writes them)");
  // Llama 3 is another family: its model_type (the first key that differs) is named with both values.
  const std::string llama = kLoraFixtures + "/llama3/base";
  CHECK(error_of(qwen3_with({{"reference", llama}})) ==
        "test.json: preference.reference: " + llama +
            "/config.json: model_type is \"llama\", the policy's is \"qwen3\": the reference model computes the "
            "log-probabilities of the policy's data in the policy's place, so it has the policy's family, "
            "vocabulary and shape");
  // The same family with another vocabulary.
  const json other_vocab = with({{"model", {{"path", kLoraFixtures + "/qwen3/base"}, {"vocab_size", 320}}},
                                 {"preference", {{"reference", kLoraFixtures + "/qwen3/merged"}}}});
  CHECK(error_of(other_vocab).find("config.json: vocab_size is 300, the policy's is 320") != std::string::npos);
  // A loss without a reference takes no reference model.
  CHECK(error_of(qwen3_with({{"loss_type", "simpo"}, {"reference", kLoraFixtures + "/qwen3/merged"}})) ==
        "test.json: preference.reference: loss_type simpo compares against no reference");
}
