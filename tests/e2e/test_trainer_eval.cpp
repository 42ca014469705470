// Evaluation as the Hugging Face Trainer's arguments ask for it, through the binary on the toy
// model: the validation file `tokenize --val` writes beside the training data is evaluated, asked-for
// evaluation without one refuses to start, and save_strategy best, save_total_limit,
// load_best_model_at_end and early stopping follow the Trainer's rules (checked against the run's
// own evaluations), each logged. --report_to tensorboard writes the events in the Trainer's
// logging_dir.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>

#include "run_helpers.hpp"
#include "tb_reader.hpp"

using namespace zt::test;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::set<int64_t> checkpoint_steps(const std::string& root) {
  std::set<int64_t> steps;
  for (const auto& entry : fs::directory_iterator(root)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, std::regex(R"(step_(\d+))"))) steps.insert(std::stoll(m[1]));
  }
  return steps;
}

// What the Trainer decides from a run's evaluations: its new bests, and the step early stopping
// (transformers' EarlyStoppingCallback: an evaluation not better than the best before it by more
// than `threshold` counts, a better one resets the count) ends the run at.
struct TrainerVerdict {
  std::vector<int64_t> new_bests;
  std::optional<int64_t> stop_step;
};

TrainerVerdict trainer_verdict(const std::vector<nlohmann::json>& evals, int64_t patience, double threshold) {
  TrainerVerdict v;
  std::optional<double> best;
  int64_t count = 0;
  for (const auto& e : evals) {
    const double loss = e["val_loss"].get<double>();
    const int64_t step = e["step"].get<int64_t>();
    if (!best || (loss < *best && std::abs(loss - *best) > threshold))
      count = 0;
    else
      ++count;
    if (!best || loss < *best) {
      best = loss;
      v.new_bests.push_back(step);
    }
    if (count >= patience) {
      v.stop_step = step;
      break;
    }
  }
  return v;
}

}  // namespace

TEST_CASE("the validation file beside the training data is evaluated; asked-for evaluation without one refuses",
          "[e2e][trainer][eval]") {
  const std::string dir = fresh_dir("trainer-eval-beside");
  write_token_file(dir + "/train.bin", 4096, 256);
  const std::string run = std::string(ZT_ZEROTRAIN) + " --data " + dir + "/train.bin --steps 4 --eval_steps 2 " +
                          "--output_dir " + dir + "/out";
  // No data.val and nothing beside train.bin: one line naming the fix, exit 2, nothing written.
  std::string log = run_status(run, dir + "/refused.log", 2);
  INFO(log);
  CHECK(has(log, "error: --eval_steps 2: training.eval_strategy: asks for evaluation, and there is no validation "
                 "data"));
  CHECK(has(log, "(expected --set data.val=FILE, or a token file X.bin from zerotrain tokenize --val N%, which writes "
                 "X.val.bin beside it)"));
  CHECK_FALSE(fs::exists(dir + "/out"));

  // tokenize --val's file beside it: evaluated, and the start says where it came from.
  write_token_file(dir + "/train.val.bin", 1024, 256, 3);
  const int code = run_command(run, dir + "/beside.log");
  log = read_file(dir + "/beside.log");
  INFO(log);
  REQUIRE(code == 0);
  CHECK(has(log, "data.val: " + dir + "/train.val.bin, the validation file beside data.train"));
  const Metrics m = read_metrics(dir + "/out/metrics.jsonl");
  REQUIRE(m.evals.size() == 2);
  CHECK(m.evals[0]["step"] == 2);
  CHECK(m.evals[1]["step"] == 4);
}

TEST_CASE("save_strategy best, save_total_limit, load_best_model_at_end and early stopping as the Trainer's",
          "[e2e][trainer][eval]") {
  // Validation tokens of another pattern than the training tokens, and a learning rate high enough
  // that the validation loss goes up and down: new bests, evaluations without one, and an end.
  const std::string dir = fresh_dir("trainer-eval-best");
  write_token_file(dir + "/train.bin", 8192, 256);
  write_token_file(dir + "/train.val.bin", 1024, 256, 101);
  const int64_t patience = 4;
  const std::string out = dir + "/out";
  const std::string run = std::string(ZT_ZEROTRAIN) + " --data " + dir + "/train.bin --max_steps 80 " +
                          "--learning_rate 3e-2 --eval_steps 2 --save_strategy best --save_total_limit 2 " +
                          "--load_best_model_at_end --early_stopping_patience " + std::to_string(patience) +
                          " --logging_steps 1 --output_dir " + out;
  const int code = run_command(run, dir + "/run.log");
  const std::string log = read_file(dir + "/run.log");
  INFO(log);
  REQUIRE(code == 0);
  const Metrics m = read_metrics(out + "/metrics.jsonl");
  const TrainerVerdict expected = trainer_verdict(m.evals, patience, 0.0);
  REQUIRE(expected.stop_step);  // the data is such that early stopping ends the run
  REQUIRE(expected.new_bests.size() >= 2);
  const int64_t stop = *expected.stop_step, best = expected.new_bests.back();
  REQUIRE(best < stop);

  // Early stopping ended the run after the evaluation the Trainer stops at, and the last line says so.
  CHECK(m.steps.size() == size_t(stop));
  CHECK(m.evals.back()["step"] == stop);
  CHECK(has(log, "early stopping at step " + std::to_string(stop) + ": eval_loss did not improve by more than 0 for 4 "
                 "evaluations (training.early_stopping_patience 4)"));
  CHECK(has(log, "info: stopped early at step " + std::to_string(stop) + " of 80: eval_loss did not improve"));
  CHECK(has(log, "; best eval_loss "));
  CHECK(has(log, " at step " + std::to_string(best) + "; checkpoint at "));
  // A line for each new best; a checkpoint at each, and at the end the best and the newest are left
  // (the best takes the place of the newest but one), each deletion logged.
  CHECK(count_of(log, "info: new best: eval_loss ") == expected.new_bests.size());
  CHECK(checkpoint_steps(out + "/checkpoints") == std::set<int64_t>{best, stop});
  CHECK(count_of(log, " deleted: training.keep_last 2 keeps the newest") == expected.new_bests.size() - 1);
  // The final model is the best checkpoint's: the same bytes as exporting it, not the last step's.
  CHECK(has(log, "load_best_model_at_end: the final model is the best checkpoint's"));
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(best));
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " export " + out + "/checkpoints/" + name + " -o " + dir + "/best",
                      dir + "/export-best.log") == 0);
  std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(stop));
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " export " + out + "/checkpoints/" + name + " -o " + dir + "/last",
                      dir + "/export-last.log") == 0);
  const std::string final_weights = read_file(out + "/model.safetensors");
  CHECK(final_weights == read_file(dir + "/best/model.safetensors"));
  CHECK(final_weights != read_file(dir + "/last/model.safetensors"));
}

TEST_CASE("a resumed run keeps the best of its evaluations before the resume, as the Trainer's state does",
          "[e2e][trainer][eval]") {
  // A constant schedule: the same steps whatever the length, so that the second run, resumed from
  // the best (all save_total_limit 1 leaves), redoes the first's evaluations after it.
  const std::string dir = fresh_dir("trainer-eval-resume");
  write_token_file(dir + "/train.bin", 8192, 256);
  write_token_file(dir + "/train.val.bin", 1024, 256, 101);
  const std::string out = dir + "/out";
  const std::string run = std::string(ZT_ZEROTRAIN) + " --data " + dir + "/train.bin --learning_rate 3e-2 " +
                          "--lr_scheduler_type constant --eval_steps 2 --save_strategy best --save_total_limit 1 " +
                          "--load_best_model_at_end --output_dir " + out;
  REQUIRE(run_command(run + " --max_steps 32", dir + "/first.log") == 0);
  const Metrics first = read_metrics(out + "/metrics.jsonl");
  const TrainerVerdict before = trainer_verdict(first.evals, 1000, 0.0);
  REQUIRE(!before.new_bests.empty());
  const int64_t best = before.new_bests.back();
  REQUIRE(best < 32);
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(best));
  // save_total_limit 1 at the end of a run: the best alone, and `latest` names it.
  CHECK(checkpoint_steps(out + "/checkpoints") == std::set<int64_t>{best});
  CHECK(read_file(out + "/checkpoints/latest") == std::string(name) + "\n");
  CHECK(has(read_file(dir + "/first.log"), "step_00000032 deleted: training.keep_last 1 keeps only the best (" +
                                               std::string(name) + ") at the end of a run"));

  const int code = run_command(run + " --max_steps 36 --resume", dir + "/second.log");
  const std::string log = read_file(dir + "/second.log");
  INFO(log);
  REQUIRE(code == 0);
  const Metrics all = read_metrics(out + "/metrics.jsonl");
  REQUIRE(trainer_verdict(all.evals, 1000, 0.0).new_bests.back() == best);  // none after the resume beats it
  CHECK(has(log, "info: best so far: eval_loss "));
  CHECK(has(log, " at step " + std::to_string(best) + " (from "));
  CHECK_FALSE(has(log, "info: new best:"));
  // Kept through the second run's saves, and the final model is still its weights.
  CHECK(checkpoint_steps(out + "/checkpoints") == std::set<int64_t>{best});
  CHECK(has(log, "load_best_model_at_end: the final model is the best checkpoint's, " + out + "/checkpoints/" + name));
}

TEST_CASE("--report_to tensorboard writes the events in the Trainer's logging_dir, and says where",
          "[e2e][trainer][monitor]") {
  const std::string dir = fresh_dir("trainer-report-to");
  const int code = run_command("cd " + dir + " && " + ZT_ZEROTRAIN + " --steps 2 --eval_steps 0 --output_dir out " +
                                   "--report_to tensorboard",
                               dir + "/run.log");
  const std::string log = read_file(dir + "/run.log");
  INFO(log);
  REQUIRE(code == 0);
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir + "/out/runs"))
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(entry.path());
  REQUIRE(files.size() == 1);
  const std::string run_dir = files[0].parent_path().filename().string();
  CHECK(std::regex_match(run_dir, std::regex(R"([A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+)")));  // <date>_<host>
  CHECK(has(log, "TensorBoard: events in out/runs/" + run_dir + " (the Trainer's logging_dir)"));
  const auto events = read_tb_events(read_file(files[0].string()));
  size_t losses = 0;
  for (const auto& e : events)
    for (const auto& [tag, value] : e.values) losses += tag == "Train/Samples/train_loss";
  CHECK(losses == 2);
}
