#pragma once
// Stop requests. SIGINT (Ctrl-C), SIGTERM (schedulers, srun, mpirun ending a job), SIGUSR1 (what
// schedulers send before the end of a job's time) and the two relayed signals below all ask the
// trainer to stop after the current step: the ranks agree on it in the step's all-reduce, so every rank stops
// after the same step, saves a checkpoint of it when training.checkpoint_dir is set (complete, and
// named by `latest`, before the process exits), and exits with kExitInterrupted. An interrupted run
// skips the final eval and training.save_final: it must not look like a finished one.
//
// During set-up (from install() until end_setup(), called just before the first step) there is no
// step to finish: the first stop signal ends the process at once, saying so on stderr, with exit
// status 128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 138 for SIGUSR1; a relayed
// signal counts as the one it stands for), as a shell reports a process the signal ended. Nothing the run writes exists
// yet but empty metrics and monitor files. Loading a large model or scanning a large data file can take minutes; a
// scheduler's SIGTERM must not wait for them, nor for a first step and evaluation after them.
//
// SIGINT or SIGTERM a second time ends the process at once with the signal's default action
// (Ctrl-C twice). SIGUSR1 and the relayed signals only ever ask: the launcher repeats them until the
// job ends, so that ranks still starting when Ctrl-C came get them too. Two different signals count
// as one request: a scheduler that signals both the launcher and the ranks still gets a clean stop.
//
// Relayed signals: mpirun ends the job on SIGINT or SIGTERM and forwards neither (Open MPI refuses
// to), so scripts/launch.sh turns the SIGINT it receives into SIGRTMIN+1 and its SIGTERM into
// SIGRTMIN+2, which mpirun forwards to every rank (ess_base_forward_signals). The ranks name them
// as what they were: "SIGINT (Ctrl-C to the launcher)".
//
// Compute threads never take these signals. oneDNN's JIT GEMM kernels (Debian's libdnnl 2.6 among
// them; fixed upstream after oneDNN issue #4845) point the stack pointer into the heap while they
// run; a handler run on such a thread writes its frame over heap memory, and the process later
// aborts in free(). install() blocks the stop signals in the
// calling thread, so in every thread it starts afterwards (OpenMP workers, the communication
// thread), and starts one thread that has them unblocked and does nothing else; threads started
// before (MPI's) may take them too, on an ordinary stack. The handlers stay for the life of the
// process (a repeated SIGUSR1 may arrive while MPI shuts down).
#include <csignal>

#include "core/exit_status.hpp"

namespace zt {

class StopSignals {
public:
  // Call once, from the main thread, before any compute thread exists (after MPI_Init is fine).
  // The process is then in set-up.
  static void install();
  // Set-up is over: from now on a stop signal asks to stop after the current step.
  static void end_setup();
  static bool requested();           // a stop signal reached this process
  static int first_signal();         // the signal that asked first, 0 when none
  static const char* name(int sig);  // "SIGINT", "SIGTERM", "SIGUSR1", "SIGINT (Ctrl-C to the launcher)"
  // The signal the launcher sends for SIGINT or SIGTERM it received (0 for any other).
  static int relayed(int sig);
};

}  // namespace zt
