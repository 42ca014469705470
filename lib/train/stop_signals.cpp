#include "train/stop_signals.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace zt {

namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGUSR1};

std::atomic<bool> g_seen[3];  // per signal of kSignals
std::atomic<int> g_first{0};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the handler may only touch lock-free atomics");

int index_of(int sig) {
  for (int i = 0; i < 3; ++i)
    if (kSignals[i] == sig) return i;
  return -1;
}

extern "C" void on_stop_signal(int sig) {
  const int i = index_of(sig);
  if (i < 0) return;
  if (!g_seen[i].exchange(true) || sig == SIGUSR1) {
    int none = 0;
    g_first.compare_exchange_strong(none, sig);
    return;
  }
  // SIGINT or SIGTERM again: its default action (termination), now. The signal is blocked inside
  // its own handler, so the raised one is delivered as the handler returns.
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void StopSignals::install() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress carry on; the request is checked per step
  for (int sig : kSignals) sigaction(sig, &action, nullptr);

  sigset_t stop_set;
  sigemptyset(&stop_set);
  for (int sig : kSignals) sigaddset(&stop_set, sig);
  // The thread that takes them: started first, so it inherits this thread's mask as it is now,
  // and unblocks them explicitly in case the process started with them blocked.
  std::thread([stop_set] {
    pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
    for (;;) pause();
  }).detach();
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
}

bool StopSignals::requested() { return g_first.load() != 0; }

int StopSignals::first_signal() { return g_first.load(); }

const char* StopSignals::name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace zt
