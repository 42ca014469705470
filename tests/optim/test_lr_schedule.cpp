// Expected values are computed here by hand from DeepSpeed's formulas (lr_schedules.py).
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "optim/lr_schedule.hpp"

using namespace zt;

namespace {
double beta1_at(const LrScheduleConfig& c, double beta1, int64_t steps_taken) {
  return betas_at(c, {beta1, 0.999}, steps_taken).beta1;
}
// WarmupLR or WarmupDecayLR from min_lr to max_lr over `steps`.
LrScheduleConfig warmup(const std::string& type, double min_lr, double max_lr, int64_t steps,
                        const std::string& warmup_type) {
  return {.type = type,
          .warmup_min_lr = min_lr,
          .warmup_max_lr = max_lr,
          .warmup_num_steps = steps,
          .warmup_type = warmup_type};
}
}  // namespace

TEST_CASE("no scheduler keeps the optimizer lr", "[optim][schedule]") {
  LrScheduleConfig c;
  CHECK(lr_at(c, 3e-4, 0) == 3e-4);
  CHECK(lr_at(c, 3e-4, 12345) == 3e-4);
  CHECK(beta1_at(c, 0.9, 7) == 0.9);
}

TEST_CASE("WarmupLR log and linear", "[optim][schedule]") {
  LrScheduleConfig c = warmup("WarmupLR", 0.0, 1e-3, 100, "log");
  CHECK(lr_at(c, 5.0, 0) == 0.0);  // first step: warmup_min_lr; base lr unused
  CHECK(lr_at(c, 5.0, 9) == Approx(std::log(10.0) / std::log(100.0) * 1e-3).epsilon(1e-14));  // = 0.5e-3
  CHECK(lr_at(c, 5.0, 9) == Approx(0.5e-3).epsilon(1e-14));
  CHECK(lr_at(c, 5.0, 99) == Approx(std::log(100.0) / std::log(100.0) * 1e-3));
  CHECK(lr_at(c, 5.0, 100) == 1e-3);
  CHECK(lr_at(c, 5.0, 100000) == 1e-3);

  c.warmup_min_lr = 1e-4;
  CHECK(lr_at(c, 5.0, 0) == 1e-4);
  CHECK(lr_at(c, 5.0, 9) == Approx(1e-4 + 0.9e-3 * 0.5).epsilon(1e-14));

  c.warmup_type = "linear";
  CHECK(lr_at(c, 5.0, 0) == 1e-4);
  CHECK(lr_at(c, 5.0, 25) == Approx(1e-4 + 0.9e-3 * 25.0 / 100.0).epsilon(1e-14));
  CHECK(lr_at(c, 5.0, 100) == 1e-3);

  c.warmup_num_steps = 1;  // DeepSpeed raises it to 2
  CHECK(lr_at(c, 5.0, 1) == Approx(1e-4 + 0.9e-3 * 0.5).epsilon(1e-14));
  CHECK(lr_at(c, 5.0, 2) == 1e-3);

  c.warmup_type = "cubic";
  CHECK_THROWS_AS(lr_at(c, 5.0, 0), zt::Error);
}

TEST_CASE("WarmupDecayLR decays linearly to the minimum at total_num_steps", "[optim][schedule]") {
  LrScheduleConfig c = warmup("WarmupDecayLR", 0.0, 6e-4, 10, "linear");
  c.total_num_steps = 110;
  CHECK(lr_at(c, 1.0, 0) == 0.0);
  CHECK(lr_at(c, 1.0, 5) == Approx(6e-4 * 0.5).epsilon(1e-14));
  CHECK(lr_at(c, 1.0, 10) == Approx(6e-4 * (110.0 - 10.0) / (110.0 - 10.0)));  // peak
  CHECK(lr_at(c, 1.0, 60) == Approx(6e-4 * 50.0 / 100.0).epsilon(1e-14));
  CHECK(lr_at(c, 1.0, 110) == 0.0);
  CHECK(lr_at(c, 1.0, 500) == 0.0);  // clamped
  c.warmup_min_lr = 1e-5;  // DeepSpeed decays toward warmup_min_lr: min + (max - min) * gamma
  CHECK(lr_at(c, 1.0, 60) == Approx(1e-5 + (6e-4 - 1e-5) * 0.5).epsilon(1e-14));
  CHECK(lr_at(c, 1.0, 110) == 1e-5);
  c.warmup_type = "log";
  CHECK(lr_at(c, 1.0, 3) == Approx(1e-5 + (6e-4 - 1e-5) * std::log(4.0) / std::log(10.0)).epsilon(1e-14));
}

TEST_CASE("WarmupCosineLR scales the optimizer lr by a ratio", "[optim][schedule]") {
  LrScheduleConfig c;
  c.type = "WarmupCosineLR";
  c.total_num_steps = 1010;
  c.warmup_num_steps = 10;
  c.warmup_min_ratio = 0.1;
  c.cos_min_ratio = 1e-4;
  c.warmup_type = "log";
  const double lr = 2e-3;
  CHECK(lr_at(c, lr, 0) == Approx(lr * 0.1));
  CHECK(lr_at(c, lr, 4) == Approx(lr * (0.1 + 0.9 * std::log(5.0) / std::log(10.0))).epsilon(1e-14));
  // First cosine step: real_last_step = 1 of 1000.
  double r1 = 1e-4 + (1 - 1e-4) * (1 + std::cos(std::numbers::pi * 1.0 / 1000.0)) / 2;
  CHECK(lr_at(c, lr, 10) == Approx(lr * r1).epsilon(1e-14));
  // Halfway: cos(pi/2) = 0 -> ratio = 1e-4 + (1 - 1e-4) / 2.
  CHECK(lr_at(c, lr, 509) == Approx(lr * (1e-4 + (1 - 1e-4) * 0.5)).epsilon(1e-12));
  // End: cos(pi) = -1 -> cos_min_ratio.
  CHECK(lr_at(c, lr, 1009) == Approx(lr * 1e-4).epsilon(1e-9));
  c.warmup_type = "linear";
  CHECK(lr_at(c, lr, 5) == Approx(lr * (0.1 + 0.9 * 0.5)).epsilon(1e-14));
}

TEST_CASE("OneCycle cycles lr and momentum, then decays", "[optim][schedule]") {
  LrScheduleConfig c;
  c.type = "OneCycle";
  c.cycle_min_lr = 1e-4;
  c.cycle_max_lr = 1e-3;
  c.cycle_first_step_size = 10;
  c.cycle_second_step_size = 30;
  c.decay_step_size = 5;
  c.decay_lr_rate = 0.5;
  c.cycle_min_mom = 0.85;
  c.cycle_max_mom = 0.95;
  c.decay_mom_rate = 0.01;
  const double amp = 9e-4;
  // First step: cycle_min_lr, and the momentum DeepSpeed sets when it creates the schedule:
  // cycle_min_mom (its first scheduler step comes after the first optimizer step).
  CHECK(lr_at(c, 1.0, 0) == Approx(1e-4).epsilon(1e-14));
  CHECK(beta1_at(c, 0.9, 0) == Approx(0.85).epsilon(1e-14));
  // Then the cycle: momentum at its maximum where lr is at its minimum.
  CHECK(beta1_at(c, 0.9, 40) == Approx(0.95).epsilon(1e-14));
  // beta2 is held at 0.99 while momentum cycles, whatever the optimizer's.
  for (int64_t k : {0, 4, 10, 50}) CHECK(betas_at(c, {0.9, 0.999}, k).beta2 == 0.99);
  // Rising: x = k / 40, step_ratio = 0.25, scale = x / 0.25.
  CHECK(lr_at(c, 1.0, 4) == Approx(1e-4 + amp * (4.0 / 40.0) / 0.25).epsilon(1e-14));
  CHECK(beta1_at(c, 0.9, 4) == Approx(0.95 - 0.1 * 0.4).epsilon(1e-14));
  CHECK(lr_at(c, 1.0, 10) == Approx(1e-3).epsilon(1e-14));  // peak
  CHECK(beta1_at(c, 0.9, 10) == Approx(0.85).epsilon(1e-14));
  // Falling: scale = (x - 1) / (0.25 - 1).
  CHECK(lr_at(c, 1.0, 25) == Approx(1e-4 + amp * (25.0 / 40.0 - 1) / (0.25 - 1)).epsilon(1e-14));
  CHECK(lr_at(c, 1.0, 40) == Approx(1e-4).epsilon(1e-14));  // end of the cycle
  // Decay: interval = (k - 40) / 5.
  CHECK(lr_at(c, 1.0, 41) == Approx(1e-4 / (1 + 0.5 * 1.0 / 5.0)).epsilon(1e-14));
  CHECK(lr_at(c, 1.0, 50) == Approx(1e-4 / (1 + 0.5 * 2.0)).epsilon(1e-14));
  CHECK(beta1_at(c, 0.9, 50) == Approx(0.95 * (1 + 0.01 * 2.0)).epsilon(1e-14));
  // No decay configured: stays at the cycle ends.
  c.decay_lr_rate = 0;
  c.decay_mom_rate = 0;
  CHECK(lr_at(c, 1.0, 50) == 1e-4);
  CHECK(beta1_at(c, 0.9, 50) == 0.95);
  c.cycle_momentum = false;
  CHECK(beta1_at(c, 0.9, 4) == 0.9);
  CHECK(betas_at(c, {0.9, 0.999}, 4).beta2 == 0.999);
  // Second step size defaults to the first: symmetric triangle.
  c.cycle_second_step_size = -1;
  CHECK(lr_at(c, 1.0, 15) == Approx(1e-4 + amp * 0.5).epsilon(1e-14));
}

TEST_CASE("LRRangeTest continuous and staircase", "[optim][schedule]") {
  LrScheduleConfig c;
  c.type = "LRRangeTest";
  c.lr_range_test_min_lr = 1e-4;
  c.lr_range_test_step_size = 10;
  c.lr_range_test_step_rate = 2.0;
  CHECK(lr_at(c, 1.0, 0) == 1e-4);
  CHECK(lr_at(c, 1.0, 15) == Approx(1e-4 * (1 + 2.0 * 1.5)).epsilon(1e-14));
  c.lr_range_test_staircase = true;
  CHECK(lr_at(c, 1.0, 9) == 1e-4);
  CHECK(lr_at(c, 1.0, 15) == Approx(1e-4 * (1 + 2.0 * 1.0)).epsilon(1e-14));
  CHECK(lr_at(c, 1.0, 20) == Approx(1e-4 * (1 + 2.0 * 2.0)).epsilon(1e-14));
}

TEST_CASE("unknown schedule and negative steps are errors", "[optim][schedule]") {
  LrScheduleConfig c;
  c.type = "Cosine";
  CHECK_THROWS_WITH(lr_at(c, 1e-3, 0), Catch::Contains("Cosine"));
  c.type = "";
  CHECK_THROWS_AS(lr_at(c, 1e-3, -1), zt::Error);
}
