#include <catch2/catch.hpp>

#include "zero/loss_scaler.hpp"

using namespace zt;

static LossScalerOptions fp16(int power, int64_t window, int hysteresis, bool consecutive = false, double min = 1) {
  return {.initial_scale_power = power,
          .loss_scale_window = window,
          .hysteresis = hysteresis,
          .consecutive_hysteresis = consecutive,
          .min_loss_scale = min};
}

TEST_CASE("dynamic loss scale: hysteresis delays the first halving", "[loss_scaler]") {
  LossScaler s(fp16(16, 1000, 2));
  CHECK(s.scale() == 65536.0f);
  s.update(true);  // spends the one spare hysteresis
  CHECK(s.scale() == 65536.0f);
  s.update(true);  // hysteresis used up: halve
  CHECK(s.scale() == 32768.0f);
  s.update(true);  // stays used up without a window of good steps
  CHECK(s.scale() == 16384.0f);
}

TEST_CASE("dynamic loss scale doubles after a window of good steps and restores hysteresis", "[loss_scaler]") {
  LossScaler s(fp16(4, 3, 2));
  s.update(true);
  s.update(true);
  CHECK(s.scale() == 8.0f);
  s.update(false);
  s.update(false);
  CHECK(s.scale() == 8.0f);
  s.update(false);  // third good step since the last overflow
  CHECK(s.scale() == 16.0f);
  s.update(true);  // hysteresis restored by the doubling: this one is absorbed
  CHECK(s.scale() == 16.0f);
}

TEST_CASE("first doubling comes after loss_scale_window good steps from the start", "[loss_scaler]") {
  LossScaler s(fp16(2, 4, 1));
  for (int i = 0; i < 3; ++i) s.update(false);
  CHECK(s.scale() == 4.0f);
  s.update(false);
  CHECK(s.scale() == 8.0f);
}

TEST_CASE("consecutive_hysteresis refills on every good step", "[loss_scaler]") {
  LossScaler s(fp16(10, 1000, 2, true));
  s.update(true);   // spend one
  s.update(false);  // refilled
  s.update(true);   // spend again: no halving
  CHECK(s.scale() == 1024.0f);
  s.update(true);
  CHECK(s.scale() == 512.0f);
}

TEST_CASE("overflow at the minimum scale stops the run", "[loss_scaler]") {
  LossScaler s(fp16(1, 1000, 1, false, 1));
  s.update(true);
  CHECK(s.scale() == 1.0f);
  CHECK_THROWS_WITH(s.update(true), Catch::Contains("already at minimum"));
}

TEST_CASE("a static loss scale never moves", "[loss_scaler]") {
  auto c = fp16(16, 2, 1);
  c.loss_scale = 128;
  LossScaler s(c);
  s.update(true);
  s.update(false);
  s.update(false);
  CHECK(s.scale() == 128.0f);
  CHECK_FALSE(s.dynamic());
}
