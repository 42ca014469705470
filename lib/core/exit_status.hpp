#pragma once
// zerotrain's exit statuses, for every command (docs/config.md, "Exit status"):
//   0                    done: every output asked for was written
//   1  kExitFailed       a failure during the work (an output that could not be written, a rank
//                        that failed), or a command's error
//   2  kExitBadInput     bad input (config, arguments, files), refused before anything is written;
//                        the launcher never restarts such a job
//   75 kExitInterrupted  a stop request was honoured (EX_TEMPFAIL of sysexits.h, "try again later"):
//                        the same command with training.resume auto continues the run
//   128 + N              a second stop signal N ended the process at once (130 for SIGINT)

namespace zt {

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInterrupted = 75;
constexpr int exit_status_of_signal(int signal) { return 128 + signal; }

}  // namespace zt
