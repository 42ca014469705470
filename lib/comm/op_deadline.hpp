#pragma once
// When a collective that started at `started` has run too long (training.comm_timeout). Both
// backends use it. A timeout of 0 or less, or one too large for the clock to reach (1e10 s, the
// natural way to write "never"), means no deadline: the sum saturates instead of overflowing into
// the past, which would abort the job at its first collective.
#include <chrono>
#include <cmath>
#include <limits>

namespace zt {

class OpDeadline {
public:
  using Clock = std::chrono::steady_clock;

  OpDeadline(Clock::time_point started, double timeout_seconds) {
    if (!(timeout_seconds > 0)) return;  // also NaN
    using Rep = Clock::rep;
    const double ticks = timeout_seconds * double(Clock::period::den) / double(Clock::period::num);
    const Rep room = (Clock::time_point::max() - started).count();
    // double(room) may round up past room; a timeout that near the end of time is "never" anyway.
    if (!std::isfinite(ticks) || ticks >= double(room)) return;
    deadline_ = started + Clock::duration(Rep(ticks));
    never_ = false;
  }

  bool never() const { return never_; }
  bool passed(Clock::time_point now) const { return !never_ && now > deadline_; }

private:
  Clock::time_point deadline_{};
  bool never_ = true;
};

}  // namespace zt
