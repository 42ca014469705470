// The preference block: TRL's DPOConfig names and defaults, its learning rate of 1e-6 where none is
// given, TRL's --beta / --loss_type / --label_smoothing, and the values refused.
#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("a preference block takes DPOConfig's defaults, and its learning rate where none is given") {
  const Config c = resolve(with({{"preference", json::object()}}));
  CHECK(c.preference.enabled);
  CHECK(c.preference.loss_type == "sigmoid");
  CHECK(c.preference.beta == 0.1);
  CHECK(c.preference.label_smoothing == 0.0);
  CHECK(c.preference.reference == "precompute");
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
  CHECK(c.preference.loss_type == "robust");
  CHECK(c.preference.label_smoothing == 0.1);
}

TEST_CASE("the preference block refuses what it does not compute") {
  CHECK(error_of(with({{"preference", {{"loss_type", "hinge"}}}})) ==
        "test.json: preference.loss_type: \"hinge\" is not valid (expected sigmoid, robust or ipo)");
  CHECK(error_of(with({{"preference", {{"beta", 0}}}})) ==
        "test.json: preference.beta: 0 is out of range (expected > 0)");
  CHECK(error_of(with({{"preference", {{"label_smoothing", 0.1}}}})) ==
        "test.json: preference.label_smoothing: applies to loss_type robust (TRL's conservative DPO), not sigmoid");
  CHECK(error_of(with({{"preference", {{"loss_type", "robust"}, {"label_smoothing", 0.5}}}})).find(
            "preference.label_smoothing: 0.5 is out of range") != std::string::npos);
}
