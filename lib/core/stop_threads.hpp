#pragma once
// Ends threads that wait on a condition variable for work or a stop: sets `stopping` under the
// mutex they wait with, wakes them all, and waits for each to end.
#include <condition_variable>
#include <mutex>
#include <span>
#include <thread>

namespace zt {

inline void stop_threads(std::mutex& mutex, bool& stopping, std::condition_variable& cv,
                         std::span<std::thread> threads) {
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
}

}  // namespace zt
