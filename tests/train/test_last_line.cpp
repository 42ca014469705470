// The last line of a run says how it ended, at which step, where its checkpoint is and how to go
// on: a stop reads as a stop.
#include <catch2/catch.hpp>

#include "train/last_line.hpp"

using namespace zt;

namespace {

RunEnding stopped_at(int64_t step) {
  RunEnding e;
  e.step = step;
  e.steps = 100;
  e.interrupted = true;
  e.stop_signal = "SIGINT (Ctrl-C to the launcher)";
  e.checkpoints = true;
  e.checkpoint = "/runs/ckpt/step_00000007";
  e.exit_code = 75;
  return e;
}

}  // namespace

TEST_CASE("an interrupted run's last line: the step, the signal, the checkpoint and the resume", "[last_line]") {
  RunEnding e = stopped_at(7);
  CHECK(last_line(e) ==
        "stopped at step 7 of 100: interrupted by SIGINT (Ctrl-C to the launcher); checkpoint at "
        "/runs/ckpt/step_00000007; resume with the same command and --set training.resume=auto (exit status 75)");
  e.resume.from = config::ResumeFrom::Auto;
  CHECK_THAT(last_line(e), Catch::Contains("; resume with the same command (training.resume auto) (exit status 75)"));
  e.stop_signal = "";  // only another rank was signalled
  CHECK_THAT(last_line(e),
             Catch::StartsWith("stopped at step 7 of 100: interrupted by a stop signal to another rank;"));
}

TEST_CASE("without a checkpoint the last line says so, and that a rerun starts over", "[last_line]") {
  RunEnding e = stopped_at(7);
  e.checkpoints = false;
  e.checkpoint = "";
  CHECK(last_line(e) == "stopped at step 7 of 100: interrupted by SIGINT (Ctrl-C to the launcher); no checkpoint "
                        "(training.checkpoint_dir is not set); a rerun starts again from step 1 (exit status 75)");
  e.checkpoints = true;  // a checkpoint_dir whose `latest` could not be read
  CHECK_THAT(last_line(e), Catch::Contains("; no checkpoint saved; a rerun starts again from step 1"));
}

TEST_CASE("a failed write and a finished run end with their own last line", "[last_line]") {
  RunEnding e = stopped_at(7);
  e.interrupted = false;
  e.output_failure = "cannot write run.jsonl: No space left on device";
  e.exit_code = 1;
  CHECK(last_line(e) == "stopped at step 7 of 100: cannot write run.jsonl: No space left on device; checkpoint at "
                        "/runs/ckpt/step_00000007; resume with the same command and --set training.resume=auto "
                        "(exit status 1)");
  RunEnding done;
  done.step = done.steps = 100;
  done.checkpoints = true;
  done.checkpoint = "ckpt/step_00000100";
  CHECK(last_line(done) == "finished at step 100 of 100; checkpoint at ckpt/step_00000100 (exit status 0)");
  done.checkpoints = false;
  done.checkpoint = "";
  CHECK(last_line(done) == "finished at step 100 of 100 (exit status 0)");
}

TEST_CASE("early stopping ends a run as finished, naming why and the best", "[last_line]") {
  RunEnding e;
  e.step = 30;
  e.steps = 100;
  e.checkpoints = true;
  e.checkpoint = "/runs/ckpt/step_00000030";
  e.early_stop = "eval_loss did not improve by more than 0 for 2 evaluations (training.early_stopping_patience 2)";
  e.best = "eval_loss 2.3125 at step 10";
  CHECK(last_line(e) ==
        "stopped early at step 30 of 100: eval_loss did not improve by more than 0 for 2 evaluations "
        "(training.early_stopping_patience 2); best eval_loss 2.3125 at step 10; checkpoint at "
        "/runs/ckpt/step_00000030 (exit status 0)");
}
