#include "train/stop_signals.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace zt {

namespace {

// The signals taken, and for each the signal it stands for (what a relayed one was at the launcher).
// Filled by install() before any handler runs; read-only afterwards.
constexpr int kCount = 5;
int g_signals[kCount];
int g_meaning[kCount];

std::atomic<bool> g_seen[kCount];  // per signal of g_signals
std::atomic<int> g_first{0};
std::atomic<bool> g_setup{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the handler may only touch lock-free atomics");

// What a stop signal during set-up prints, per signal of g_signals: made before any signal can
// arrive, because formatting is not allowed inside a handler.
char g_setup_message[kCount][200];
int g_setup_message_length[kCount];

// The rank as the launcher tells it (MPI is not asked: install() may run before MPI_Comm_rank).
std::string launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(var)) return value;
  return "0";
}

void prepare_setup_messages() {
  const std::string rank = launcher_rank();
  for (int i = 0; i < kCount; ++i) {
    const int n = std::snprintf(g_setup_message[i], sizeof g_setup_message[i],
                                "[rank %s] error: interrupted by %s during set-up: exiting before the first step "
                                "(exit status %d)\n",
                                rank.c_str(), StopSignals::name(g_signals[i]), exit_status_of_signal(g_meaning[i]));
    g_setup_message_length[i] = std::min(n, int(sizeof g_setup_message[i]) - 1);
  }
}

int index_of(int sig) {
  for (int i = 0; i < kCount; ++i)
    if (g_signals[i] == sig) return i;
  return -1;
}

// Only SIGINT and SIGTERM themselves end the process when they come again; SIGUSR1 and the
// relayed signals are repeated by the launcher and only ever ask.
bool asks_only(int sig) { return sig != SIGINT && sig != SIGTERM; }

extern "C" void on_stop_signal(int sig) {
  const int i = index_of(sig);
  if (i < 0) return;
  if (g_setup.load()) {
    // No step to finish yet: end now. write() and _exit() are async-signal-safe.
    (void)!::write(STDERR_FILENO, g_setup_message[i], size_t(g_setup_message_length[i]));
    ::_exit(exit_status_of_signal(g_meaning[i]));
  }
  if (!g_seen[i].exchange(true) || asks_only(sig)) {
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
  const int taken[kCount][2] = {{SIGINT, SIGINT},
                                {SIGTERM, SIGTERM},
                                {SIGUSR1, SIGUSR1},
                                {relayed(SIGINT), SIGINT},
                                {relayed(SIGTERM), SIGTERM}};
  for (int i = 0; i < kCount; ++i) g_signals[i] = taken[i][0], g_meaning[i] = taken[i][1];
  prepare_setup_messages();
  g_setup.store(true);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress carry on; the request is checked per step
  for (int sig : g_signals) sigaction(sig, &action, nullptr);

  sigset_t stop_set;
  sigemptyset(&stop_set);
  for (int sig : g_signals) sigaddset(&stop_set, sig);
  // The thread that takes them: started first, so it inherits this thread's mask as it is now,
  // and unblocks them explicitly in case the process started with them blocked.
  std::thread([stop_set] {
    pthread_sigmask(SIG_UNBLOCK, &stop_set, nullptr);
    for (;;) pause();
  }).detach();
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
}

void StopSignals::end_setup() { g_setup.store(false); }

bool StopSignals::requested() { return g_first.load() != 0; }

int StopSignals::first_signal() { return g_first.load(); }

int StopSignals::relayed(int sig) { return sig == SIGINT ? SIGRTMIN + 1 : sig == SIGTERM ? SIGRTMIN + 2 : 0; }

const char* StopSignals::name(int sig) {
  if (sig == relayed(SIGINT)) return "SIGINT (Ctrl-C to the launcher)";
  if (sig == relayed(SIGTERM)) return "SIGTERM (to the launcher)";
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

}  // namespace zt
