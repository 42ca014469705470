// A resume with another length or schedule than the checkpoint's run says what changed and what
// the next step's learning rate is under both (train/resume_schedule.hpp); the same settings say nothing.
#include <catch2/catch.hpp>

#include "config/config.hpp"
#include "optim/lr_schedule.hpp"
#include "train/resume_schedule.hpp"

using namespace zt;

namespace {

config::Config resolve(int64_t steps, const std::string& schedule = "linear") {
  config::ResolveOptions o;
  o.steps = steps;
  o.overrides = {"training.lr=1e-3", "training.lr_scheduler_type=" + schedule};
  return config::resolve_config(nlohmann::json{{"train_micro_batch_size_per_gpu", "auto"}}, o, "test.json");
}

// What a checkpoint of `saved` records after `done` steps: its config and its next lr.
ScheduleChange resume(const config::Config& saved, int64_t done, const config::Config& now) {
  const double next_lr = lr_at(saved.scheduler, saved.optimizer.lr, done);
  return resume_schedule_change(config::to_json(saved), next_lr, done, done, now);
}

}  // namespace

TEST_CASE("the same settings resume silently") {
  const auto c = resolve(10);
  CHECK(resume(c, 4, c).kind == ScheduleChange::Kind::None);
  CHECK(resume(c, 4, c).message.empty());
}

TEST_CASE("another length re-stretches the linear decay: a warning with both learning rates") {
  const ScheduleChange change = resume(resolve(10), 4, resolve(40));
  CHECK(change.kind == ScheduleChange::Kind::Schedule);
  // Step 5 of 10 runs at 1e-3 x 6/10; of 40 at 1e-3 x 36/40.
  CHECK(change.message ==
        "resuming with another schedule than the checkpoint's run (training.steps 10 -> 40): step 5 runs at lr "
        "9.000e-04 where the saved schedule gives 6.000e-04. The run follows its own settings from the saved step on, "
        "as the Hugging Face Trainer and DeepSpeed do; resume with the saved run's settings to keep its schedule");
}

TEST_CASE("another schedule type is named too") {
  const ScheduleChange change = resume(resolve(10), 4, resolve(10, "cosine"));
  CHECK(change.kind == ScheduleChange::Kind::Schedule);
  CHECK(change.message.find("training.lr_scheduler_type \"linear\" -> \"cosine\"") != std::string::npos);
}

TEST_CASE("another length under a constant schedule changes no learning rate: said, not warned") {
  const ScheduleChange change = resume(resolve(10, "constant"), 4, resolve(40, "constant"));
  CHECK(change.kind == ScheduleChange::Kind::Length);
  CHECK(change.message == "resuming with other settings than the checkpoint's run: training.steps 10 -> 40; the "
                          "learning rate of step 5 is 1.000e-03 under both");
}
