// Optimizer (Adam/AdamW only, max_grad_norm misplaced, weight decay note) and the schedules.
#include "config_test_support.hpp"
#include "optim/lr_schedule.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("params.max_grad_norm is an error pointing to gradient_clipping") {
  CHECK(error_of(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"max_grad_norm", 1.0}}}}}})) ==
        "test.json: optimizer.params.max_grad_norm: not an optimizer parameter in DeepSpeed (expected the top-level "
        "gradient_clipping)");
}

TEST_CASE("optimizers other than Adam and AdamW are not supported") {
  for (const char* type : {"Lamb", "Lion", "Adagrad", "OneBitAdam", "OneBitLamb", "ZeroOneAdam", "SGD", "MuAdam"}) {
    INFO(type);
    CHECK(error_of(with({{"optimizer", {{"type", type}}}})) ==
          std::string("test.json: optimizer.type: \"") + type +
              "\" is not supported (expected Adam or AdamW; zerotrain implements no other optimizer)");
  }
  CHECK(error_of(with({{"optimizer", {{"params", {{"lr", 1e-3}}}}}})) ==
        "test.json: optimizer.type: missing (expected Adam or AdamW)");
}

TEST_CASE("adam_w_mode: Adam follows it; AdamW is always decoupled") {
  auto adam =
      resolve(with({{"optimizer", {{"type", "Adam"}, {"params", {{"adam_w_mode", false}, {"weight_decay", 0.01}}}}}}));
  CHECK_FALSE(adam.optimizer.adam_w_mode);
  CHECK(adam.optimizer.weight_decay == 0.01);
  CapturedLog log;
  auto adamw = resolve(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"adam_w_mode", false}}}}}}));
  CHECK(adamw.optimizer.adam_w_mode);
  CHECK(log.count("optimizer.params.adam_w_mode: false has no effect with type AdamW") == 1);
}

TEST_CASE("the resolved optimizer says where weight decay applies") {
  auto j = to_json(resolve(with({})));
  CHECK(j["optimizer"]["weight_decay_applies_to"].get<std::string>().find("2 or more dimensions") != std::string::npos);
}

TEST_CASE("WarmupLR defaults: max lr = optimizer lr, 1000 steps, log") {
  auto s = resolve(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 5e-4}}}}},
                         {"scheduler", {{"type", "WarmupLR"}}}}))
               .scheduler;
  CHECK(s.type == "WarmupLR");
  CHECK(s.warmup_min_lr == 0.0);
  CHECK(s.warmup_max_lr == 5e-4);
  CHECK(s.warmup_num_steps == 1000);
  CHECK(s.warmup_type == "log");
  auto linear =
      resolve(with({{"scheduler",
                     {{"type", "WarmupLR"}, {"params", {{"warmup_type", "linear"}, {"warmup_max_lr", 0.01}}}}}}))
          .scheduler;
  CHECK(linear.warmup_type == "linear");
  CHECK(linear.warmup_max_lr == 0.01);
}

TEST_CASE("warmup_num_steps is at least 2, as in DeepSpeed") {
  for (int n : {0, 1, 2}) {
    auto s = resolve(with({{"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", n}}}}}})).scheduler;
    CHECK(s.warmup_num_steps == 2);
  }
  // "auto" from training.warmup_steps 0 as well.
  CHECK(resolve(with({{"scheduler", {{"type", "WarmupLR"}, {"params", {{"warmup_num_steps", "auto"}}}}}}))
            .scheduler.warmup_num_steps == 2);
}

TEST_CASE("WarmupDecayLR and WarmupCosineLR need total_num_steps") {
  CHECK(error_of(with({{"scheduler", {{"type", "WarmupDecayLR"}}}})) ==
        "test.json: scheduler.params.total_num_steps: missing (required by WarmupDecayLR; \"auto\" takes "
        "training.steps)");
  CHECK(error_of(with({{"scheduler", {{"type", "WarmupCosineLR"}, {"params", {{"warmup_num_steps", 5}}}}}})).find(
            "scheduler.params.total_num_steps: missing (required by WarmupCosineLR") != std::string::npos);
  auto d =
      resolve(with({{"scheduler",
                     {{"type", "WarmupDecayLR"}, {"params", {{"total_num_steps", 300}, {"warmup_num_steps", 30}}}}}}))
          .scheduler;
  CHECK(d.total_num_steps == 300);
  CHECK(d.warmup_num_steps == 30);
  CapturedLog log;
  resolve(with(
      {{"scheduler", {{"type", "WarmupDecayLR"}, {"params", {{"total_num_steps", 10}, {"warmup_num_steps", 30}}}}}}));
  CHECK(log.count("scheduler.params.total_num_steps: 10 is less than warmup_num_steps 30") == 1);
}

TEST_CASE("WarmupCosineLR defaults") {
  auto s =
      resolve(with({{"scheduler", {{"type", "WarmupCosineLR"}, {"params", {{"total_num_steps", 500}}}}}})).scheduler;
  CHECK(s.warmup_min_ratio == 0.0);
  CHECK(s.warmup_num_steps == 1000);
  CHECK(s.cos_min_ratio == 1e-4);
  CHECK(s.warmup_type == "log");
  CHECK(error_of(with({{"scheduler",
                        {{"type", "WarmupCosineLR"}, {"params", {{"total_num_steps", 5}, {"warmup_max_lr", 1}}}}}}))
            .find("scheduler.params.warmup_max_lr: unknown key") != std::string::npos);
}

TEST_CASE("OneCycle: cycle_min_lr and cycle_max_lr required, DeepSpeed's defaults otherwise") {
  CHECK(error_of(with({{"scheduler", {{"type", "OneCycle"}, {"params", {{"cycle_max_lr", 0.1}}}}}})) ==
        "test.json: scheduler.params.cycle_min_lr: missing (required by OneCycle)");
  auto s =
      resolve(
          with({{"scheduler", {{"type", "OneCycle"}, {"params", {{"cycle_min_lr", 1e-4}, {"cycle_max_lr", 1e-3}}}}}}))
          .scheduler;
  CHECK(s.cycle_min_lr == 1e-4);
  CHECK(s.cycle_max_lr == 1e-3);
  CHECK(s.decay_lr_rate == 0.0);
  CHECK(s.cycle_first_step_size == 2000);
  CHECK(s.cycle_second_step_size == -1);
  CHECK(s.cycle_first_stair_count == 0);
  CHECK(s.cycle_second_stair_count == -1);
  CHECK(s.decay_step_size == 0);
  CHECK(s.cycle_momentum);
  CHECK(s.cycle_min_mom == 0.8);
  CHECK(s.cycle_max_mom == 0.9);
  CHECK(s.decay_mom_rate == 0.0);
}

TEST_CASE("LRRangeTest defaults") {
  auto s = resolve(with({{"scheduler", {{"type", "LRRangeTest"}}}})).scheduler;
  CHECK(s.lr_range_test_min_lr == 1e-3);
  CHECK(s.lr_range_test_step_size == 2000);
  CHECK(s.lr_range_test_step_rate == 1.0);
  CHECK_FALSE(s.lr_range_test_staircase);
}

TEST_CASE("scheduler type is required and checked; a null scheduler is none") {
  CHECK(error_of(with({{"scheduler", {{"type", "CosineAnnealing"}}}})).find(
            "scheduler.type: \"CosineAnnealing\" is not valid (expected WarmupLR, WarmupDecayLR, WarmupCosineLR, "
            "OneCycle or LRRangeTest)") != std::string::npos);
  CHECK(error_of(with({{"scheduler", {{"params", json::object()}}}})).find("scheduler.type: missing") !=
        std::string::npos);
  json raw = with({});
  raw["scheduler"] = nullptr;
  CHECK(resolve(raw).scheduler.type == "linear");  // as no block
}

namespace {
// The learning rate of the first `n` optimizer steps.
std::vector<double> lrs(const Config& c, int n) {
  std::vector<double> out;
  for (int step = 0; step < n; ++step) out.push_back(zt::lr_at(c.scheduler, c.optimizer.lr, step));
  return out;
}
}  // namespace

// The references are the learning rates torch reports for transformers'
// get_linear_schedule_with_warmup (transformers 5.24, torch 2.x): optimizer.param_groups[0]["lr"]
// before each of the first steps, the scheduler stepped after each.
TEST_CASE("no scheduler block: the Hugging Face Trainer's linear schedule, warmup from training") {
  auto plain = resolve(with({{"training", {{"steps", 10}, {"lr", 3e-4}}}}));
  CHECK(plain.scheduler.type == "linear");
  CHECK(lrs(plain, 12) == std::vector<double>{0.0003, 0.00027, 0.00023999999999999998, 0.00020999999999999998,
                                              0.00017999999999999998, 0.00015, 0.00011999999999999999,
                                              8.999999999999999e-05, 5.9999999999999995e-05, 2.9999999999999997e-05,
                                              0.0, 0.0});
  auto warm = resolve(with({{"training", {{"steps", 10}, {"warmup_steps", 3}, {"lr", 6e-4}}}}));
  CHECK(lrs(warm, 12) == std::vector<double>{0.0, 0.00019999999999999998, 0.00039999999999999996, 0.0006,
                                             0.0005142857142857142, 0.00042857142857142855, 0.0003428571428571428,
                                             0.0002571428571428571, 0.0001714285714285714, 8.57142857142857e-05, 0.0,
                                             0.0});
  // One warmup step is one step (DeepSpeed's warmups last at least two).
  auto one = resolve(with({{"training", {{"steps", 4}, {"warmup_steps", 1}, {"lr", 1e-3}}}}));
  CHECK(lrs(one, 5) == std::vector<double>{0.0, 0.001, 0.0006666666666666666, 0.0003333333333333333, 0.0});
  // warmup_ratio: ceil(steps * ratio) steps, as get_warmup_steps counts them (ceil(25 * 0.1) = 3).
  auto ratio = resolve(with({{"training", {{"steps", 25}, {"warmup_ratio", 0.1}, {"lr", 2e-4}}}}));
  CHECK(ratio.scheduler.warmup_num_steps == 3);
  const auto r = lrs(ratio, 26);
  CHECK(std::vector<double>{r[0], r[1], r[2], r[3], r[10], r[24], r[25]} ==
        std::vector<double>{0.0, 6.666666666666667e-05, 0.00013333333333333334, 0.0002, 0.00013636363636363637,
                            9.090909090909091e-06, 0.0});
  // The schedule's peak is the optimizer's lr, from a block too.
  auto block = resolve(with({{"optimizer", {{"type", "AdamW"}, {"params", {{"lr", "auto"}}}}},
                             {"training", {{"steps", 10}, {"lr", 6e-4}, {"warmup_steps", 3}}}}));
  CHECK(lrs(block, 12) == lrs(warm, 12));
}

TEST_CASE("training.lr_scheduler_type constant keeps the lr; warmup_steps and warmup_ratio are one or the other") {
  auto constant = resolve(with({{"training", {{"lr_scheduler_type", "constant"}, {"lr", 5e-4}}}}));
  CHECK(constant.scheduler.type.empty());
  CHECK(lrs(constant, 3) == std::vector<double>{5e-4, 5e-4, 5e-4});
  CHECK(error_of(with({{"training", {{"lr_scheduler_type", "cosine_annealing"}}}})) ==
        "test.json: training.lr_scheduler_type: \"cosine_annealing\" is not valid (expected linear, cosine, "
        "cosine_with_restarts, polynomial, constant, constant_with_warmup, inverse_sqrt or cosine_with_min_lr)");
  CHECK(error_of(with({{"training", {{"warmup_steps", 5}, {"warmup_ratio", 0.1}}}})) ==
        "test.json: training.warmup_ratio: 0.1 given together with training.warmup_steps 5 (expected one of them: "
        "warmup_steps counts steps, warmup_ratio is a fraction of training.steps)");
  CHECK(error_of(with({{"training", {{"warmup_ratio", 1.5}}}})) ==
        "test.json: training.warmup_ratio: 1.5 is out of range (expected in [0, 1])");
  // "auto" warmup_num_steps takes the ratio's count too, as the Trainer fills it in.
  auto s = resolve(with({{"scheduler", {{"type", "WarmupDecayLR"},
                                        {"params", {{"warmup_num_steps", "auto"}, {"total_num_steps", "auto"}}}}},
                         {"training", {{"steps", 200}, {"warmup_ratio", 0.05}}}}))
               .scheduler;
  CHECK(s.warmup_num_steps == 10);
}
