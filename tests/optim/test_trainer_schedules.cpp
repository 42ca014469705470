// The Hugging Face Trainer's schedules against transformers' own: hf_schedule_fixture.json holds
// the learning rate of every step that get_scheduler's LambdaLR gives (scripts/make_hf_schedule_fixture.py).
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "optim/lr_schedule.hpp"
#include "optim/trainer_schedules.hpp"

using namespace zt;

namespace {

nlohmann::json fixture() {
  std::ifstream in(std::string(ZT_SOURCE_DIR) + "/tests/optim/hf_schedule_fixture.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

// The schedule as config/scheduler_block.cpp makes it without a scheduler block.
LrScheduleConfig schedule_of(const nlohmann::json& c) {
  LrScheduleConfig s;
  s.type = c["type"] == "constant" ? "" : c["type"].get<std::string>();
  s.warmup_max_lr = c["lr"].get<double>();
  s.warmup_num_steps = c["warmup_steps"].get<int64_t>();
  s.total_num_steps = c["total_steps"].get<int64_t>();
  const auto& k = c["kwargs"];
  s.num_cycles = k.value("num_cycles", s.type == "cosine_with_restarts" ? 1.0 : 0.5);
  s.min_lr_rate = k.contains("min_lr") ? k["min_lr"].get<double>() / s.warmup_max_lr : k.value("min_lr_rate", 0.0);
  s.lr_end = k.value("lr_end", 1e-7);
  s.power = k.value("power", 1.0);
  return s;
}

}  // namespace

TEST_CASE("the Trainer's schedules give transformers' learning rates step by step", "[optim][schedule]") {
  const nlohmann::json f = fixture();
  std::set<std::string> types;
  for (const auto& c : f["cases"]) {
    const LrScheduleConfig s = schedule_of(c);
    types.insert(c["type"].get<std::string>());
    const auto& lrs = c["lrs"];
    for (size_t k = 0; k < lrs.size(); ++k) {
      INFO(c["type"] << " warmup " << c["warmup_steps"] << " of " << c["total_steps"] << " " << c["kwargs"].dump()
                     << ", step after " << k << " updates");
      CHECK(lr_at(s, c["lr"].get<double>(), int64_t(k)) == lrs[k].get<double>());  // to the bit
    }
  }
  for (const std::string& name : trainer_schedule_names()) CHECK(types.count(name) == 1);
}

TEST_CASE("only the Trainer's schedules other than constant are trainer schedules", "[optim][schedule]") {
  CHECK(is_trainer_schedule("linear"));
  CHECK(is_trainer_schedule("cosine_with_min_lr"));
  CHECK_FALSE(is_trainer_schedule("constant"));  // the optimizer's lr: LrScheduleConfig type ""
  CHECK_FALSE(is_trainer_schedule("WarmupLR"));
  CHECK_FALSE(is_trainer_schedule(""));
}

TEST_CASE("each Trainer schedule says in words what it does after warmup", "[optim][schedule]") {
  LrScheduleConfig s;
  s.total_num_steps = 100;
  s.warmup_num_steps = 0;
  s.type = "linear";
  CHECK(describe_trainer_decay(s) == "down to 0 at step 100");
  s.type = "cosine_with_min_lr";
  s.min_lr_rate = 0.1;
  CHECK(describe_trainer_decay(s) == "a cosine (0.5 cycles) down to 0.1 x the peak at step 100");
  s.type = "inverse_sqrt";
  CHECK(describe_trainer_decay(s) == "the inverse square root of the steps over timescale 10000");
}
