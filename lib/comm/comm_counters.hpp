#pragma once
// Calls, bytes put on the wire and seconds in flight per op kind, updated by whichever thread runs
// an op (the caller, a communication thread, a watchdog) and read by the trainer.
#include <mutex>

#include "comm/communicator.hpp"

namespace zt {

class CommCounters {
public:
  void call(CommOp op) { update([&](CommStats& s) { s.calls[size_t(op)] += 1; }); }
  void sent(CommOp op, uint64_t bytes) { update([&](CommStats& s) { s.bytes_sent[size_t(op)] += bytes; }); }
  void ran(CommOp op, double seconds) { update([&](CommStats& s) { s.seconds[size_t(op)] += seconds; }); }
  CommStats snapshot() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }

private:
  template <typename F>
  void update(F&& f) {
    std::lock_guard lock(mutex_);
    f(stats_);
  }
  mutable std::mutex mutex_;
  CommStats stats_;
};

}  // namespace zt
