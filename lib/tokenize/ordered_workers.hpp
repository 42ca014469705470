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
namespace detail {

// What the reading thread and the workers share, under one mutex.
template <typename Job, typename Result>
struct OrderedWork {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::pair<size_t, Job>> queue;
  std::map<size_t, Result> done;
  size_t read = 0, consumed = 0;
  bool no_more = false;
  std::exception_ptr failure;

  void fail_with(std::exception_ptr e) {  // with the lock held
    if (!failure) failure = e;
    changed.notify_all();
  }

  // One worker: jobs from the queue until there are no more, or something failed.
  template <typename Work>
  void work_on(Work& work) {
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
  }

  // Consumes the results that are next in order (the lock is released meanwhile).
  template <typename Consume>
  void consume_ready(std::unique_lock<std::mutex>& lock, Consume& consume) {
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
  }

  // Queues the job once fewer than `limit` are in flight, consuming meanwhile; after the last job
  // (none), consumes the rest. False when there is nothing more to queue.
  template <typename Consume>
  bool add(std::optional<Job> job, size_t limit, Consume& consume) {
    std::unique_lock lock(mu);
    for (;;) {
      consume_ready(lock, consume);
      if (failure || (job ? read - consumed < limit : read == consumed)) break;
      changed.wait(lock);
    }
    if (failure || !job) return false;
    queue.emplace_back(read++, std::move(*job));
    changed.notify_all();
    return true;
  }
};

}  // namespace detail

template <typename Job, typename Result, typename Next, typename Work, typename Consume>
void run_ordered(int threads, Next&& next, Work&& work, Consume&& consume) {
  detail::OrderedWork<Job, Result> shared;
  std::vector<std::thread> workers;
  for (int t = 0; t < std::max(threads, 1); ++t) workers.emplace_back([&] { shared.work_on(work); });
  const size_t limit = size_t(std::max(threads, 1)) * 4;
  for (;;) {
    std::optional<Job> job;
    try {
      job = next();
    } catch (...) {
      std::lock_guard lock(shared.mu);
      shared.fail_with(std::current_exception());
      break;
    }
    if (!shared.add(std::move(job), limit, consume)) break;
  }
  {
    std::lock_guard lock(shared.mu);
    shared.no_more = true;
  }
  shared.changed.notify_all();
  for (auto& w : workers) w.join();
  if (shared.failure) std::rethrow_exception(shared.failure);
}

}  // namespace zt
