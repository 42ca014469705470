#pragma once
// The Work handle of the CPU backend: completed by the thread that ran the op, waited on by the
// caller without spinning (a condition variable). An op that failed rethrows its error in wait().
// Host memory is readable once the op has completed, so sync(stream) is wait().
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "comm/communicator.hpp"

namespace zt {

class CompletionWork final : public Work {
public:
  void wait() override;
  void sync(Stream) override { wait(); }
  bool is_completed() override { return done_.load(std::memory_order_acquire); }
  void complete(std::exception_ptr error = nullptr);

private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  std::atomic<bool> done_{false};
  std::exception_ptr error_;
};

}  // namespace zt
