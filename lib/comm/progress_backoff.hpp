#pragma once
// Pacing for a thread that polls outstanding MPI requests. Busy-polling would hold a core that
// compute threads (or other ranks on an oversubscribed machine) need, so after a few yields the
// poller sleeps, doubling the sleep up to a cap; any progress returns it to eager polling.
#include <algorithm>
#include <chrono>
#include <thread>

namespace zt {

class ProgressBackoff {
public:
  static constexpr int kYields = 16;
  static constexpr int kMaxSleepMicroseconds = 128;

  void reset() { idle_polls_ = 0; }
  void pause() {
    if (idle_polls_ < kYields) {
      std::this_thread::yield();
    } else {
      int doublings = std::min(idle_polls_ - kYields, 16);
      int us = std::min(kMaxSleepMicroseconds, 1 << doublings);
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    ++idle_polls_;
  }

private:
  int idle_polls_ = 0;
};

}  // namespace zt
