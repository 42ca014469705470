// scripts/launch.sh around a failed job: after a rank's death it says which step the job resumes
// from (rank 0 told it the checkpoint directory); --max-restarts starts the job again from that
// checkpoint with training.resume auto, and a job that could not resume is refused at the start;
// a job that failed in set-up (bad input) is neither restarted nor offered a resume.
#include <catch2/catch.hpp>

#include <regex>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

// The pid of the process whose command line mentions `text` and whose environment says it is MPI
// rank `rank`, or -1.
pid_t rank_pid(const std::string& text, int rank) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const std::string& process : processes_mentioning(text)) {
    const std::string pid = process.substr(0, process.find(':'));
    std::string environ = read_file("/proc/" + pid + "/environ");
    for (char& c : environ)
      if (c == '\0') c = '\n';
    if (process.find("zerotrain") != std::string::npos &&
        ("\n" + environ).find("\n" + wanted + "\n") != std::string::npos)
      return std::stoi(pid);
  }
  return -1;
}

std::string latest_step(const std::string& ckpt) {
  std::smatch m;
  const std::string latest = read_file(ckpt + "/latest");
  return std::regex_search(latest, m, std::regex(R"(step_0*(\d+))")) ? m[1].str() : "";
}

std::string job_args(const std::string& dir, int steps) {
  return " --config zero2 --steps " + std::to_string(steps) +
         " --set training.logging_steps=1 --set training.save_interval=2" + " --set training.checkpoint_dir=" + dir +
         "/ckpt";
}

// Starts `command`, kills rank 1 once step 5 is logged; returns the launcher's exit code.
int kill_rank_one_after_step_5(const std::string& command, const std::string& dir, const std::string& log) {
  Background job(command, log);
  REQUIRE(wait_for_text(log, "step     5/", 120));
  const pid_t victim = rank_pid(dir, 1);
  REQUIRE(victim > 0);
  kill(victim, SIGKILL);
  return job.wait(120);
}

}  // namespace

TEST_CASE("after a rank's death the launcher says which step the job resumes from", "[e2e][launch]") {
  auto dir = fresh_dir("launch-rank-killed");
  const std::string log = dir + "/out.log";
  const int code = kill_rank_one_after_step_5(launch(2) + job_args(dir, 100000), dir, log);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code == 128 + SIGKILL);
  const std::string step = latest_step(dir + "/ckpt");
  REQUIRE_FALSE(step.empty());
  CHECK(out.find("launch.sh: the job failed (exit status 137): resume from step " + step + " (" + dir + "/ckpt/") !=
        std::string::npos);
  CHECK(out.find("<zt-") == std::string::npos);  // the markers are the launcher's, never shown
}

TEST_CASE("--max-restarts starts a failed job again from its checkpoint", "[e2e][launch][resume]") {
  auto dir = fresh_dir("launch-restart");
  const std::string log = dir + "/out.log";
  const std::string launcher =
      std::string(ZT_SOURCE_DIR) + "/scripts/launch.sh --max-restarts 1 --restart-delay 0 -n 2 -- ";
  const int code = kill_rank_one_after_step_5(launcher + ZT_ZEROTRAIN + job_args(dir, 30), dir, log);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("launch.sh: restart 1 of 1 in 0 s, with training.resume auto") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex(R"(training continues at step (\d+))")));
  CHECK(std::stoi(m[1]) > 1);
  CHECK(out.find("finished at step 30 of 30; checkpoint at " + dir + "/ckpt/step_00000030 (exit status 0)") !=
        std::string::npos);
}

TEST_CASE("--max-restarts without training.checkpoint_dir is refused before training", "[e2e][launch]") {
  auto dir = fresh_dir("launch-restart-refused");
  const std::string out = run_status(std::string(ZT_SOURCE_DIR) + "/scripts/launch.sh --max-restarts 2 -n 2 -- " +
                                         ZT_ZEROTRAIN + " --config zero2 --steps 5",
                                     dir + "/out.log", 2);
  INFO(out);
  CHECK(out.find("launch.sh --max-restarts 2 restarts a failed job from its latest checkpoint, and "
                 "training.checkpoint_dir is not set") != std::string::npos);
  CHECK(out.find("step     1/") == std::string::npos);
  CHECK(out.find("restart 1") == std::string::npos);
}

TEST_CASE("a job that fails in set-up is neither restarted nor offered a resume", "[e2e][launch]") {
  auto dir = fresh_dir("launch-setup-failure");
  const int code =
      run_command(std::string(ZT_SOURCE_DIR) + "/scripts/launch.sh --max-restarts 2 --restart-delay 0 -n 2 -- " +
                      ZT_ZEROTRAIN + job_args(dir, 5) + " --data " + dir + "/missing.bin",
                  dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code == 2);  // bad input, refused in set-up: it would fail again
  CHECK(out.find(dir + "/missing.bin") != std::string::npos);
  CHECK(out.find("restart 1") == std::string::npos);
  CHECK(out.find("non-zero exit code") == std::string::npos);  // the rank's error line alone
  CHECK(out.find("resume from step") == std::string::npos);
  CHECK(out.find("a rerun starts") == std::string::npos);
}
