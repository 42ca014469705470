#include "comm/completion_work.hpp"

namespace zt {

void CompletionWork::wait() {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return done_.load(std::memory_order_acquire); });
  if (error_) std::rethrow_exception(error_);
}

void CompletionWork::complete(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
  }
  done_cv_.notify_all();
}

}  // namespace zt
