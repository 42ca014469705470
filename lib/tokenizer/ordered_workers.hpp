#pragma once
// Work done on worker threads and consumed in order: `next()` gives the jobs (on the calling
// thread), `work(job)` turns one into a result (on a worker), `consume(result)` takes the results
// in the order of the jobs (on the calling thread, which reads and consumes while the workers work).
// At most 4 jobs per thread are read and not yet consumed. The first exception of any of them
// stops everything and is rethrown here.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace zt {

template <typename Job, typename Result, typename Next, typename Work, typename Consume>
void run_ordered(int threads, Next&& next, Work&& work, Consume&& consume) {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::pair<size_t, Job>> queue;
  std::map<size_t, Result> done;
  size_t read = 0, consumed = 0;
  bool no_more = false;
  std::exception_ptr failure;
  auto fail_with = [&](std::exception_ptr e) {
    if (!failure) failure = e;
    changed.notify_all();
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < std::max(threads, 1); ++t)
    workers.emplace_back([&] {
      std::unique_lock lock(mu);
      for (;;) {
        changed.wait(lock, [&] { return !queue.empty() || no_more || failure; });
        if (failure || queue.empty()) return;
        auto [index, job] = std::move(queue.front());
        queue.pop_front();
        lock.unlock();
        try {
          Result r = work(job);
          lock.lock();
          done.emplace(index, std::move(r));
          changed.notify_all();
        } catch (...) {
          lock.lock();
          fail_with(std::current_exception());
        }
      }
    });
  // Consumes the results that are next in order (the lock is released meanwhile).
  auto consume_ready = [&](std::unique_lock<std::mutex>& lock) {
    while (!failure && !done.empty() && done.begin()->first == consumed) {
      Result r = std::move(done.begin()->second);
      done.erase(done.begin());
      lock.unlock();
      try {
        consume(std::move(r));
      } catch (...) {
        lock.lock();
        fail_with(std::current_exception());
        return;
      }
      lock.lock();
      ++consumed;
    }
  };
  const size_t limit = size_t(std::max(threads, 1)) * 4;
  for (;;) {
    std::optional<Job> job;
    try {
      job = next();
    } catch (...) {
      std::lock_guard lock(mu);
      fail_with(std::current_exception());
      break;
    }
    std::unique_lock lock(mu);
    for (;;) {  // wait while enough jobs are in flight, or for the last ones
      consume_ready(lock);
      if (failure || (job ? read - consumed < limit : read == consumed)) break;
      changed.wait(lock);
    }
    if (failure || !job) break;
    queue.emplace_back(read++, std::move(*job));
    changed.notify_all();
  }
  {
    std::lock_guard lock(mu);
    no_more = true;
  }
  changed.notify_all();
  for (auto& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace zt
