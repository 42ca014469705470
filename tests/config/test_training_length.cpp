// How long a run trains: training.steps as given, else training.epochs over data.train's windows,
// else the scheduler's total_num_steps, else 100; sources that disagree are warned about, naming the
// one that wins; the start line says where the length came from. data.train as a list or a glob.
#include <filesystem>
#include <fstream>

#include "config_test_support.hpp"

using namespace zt::config;
using namespace zt::config::testing;
namespace fs = std::filesystem;

namespace {

const json kDecay200 = {{"type", "WarmupDecayLR"}, {"params", {{"warmup_num_steps", 10}, {"total_num_steps", 200}}}};

// A directory of text files (a token per byte) for the epochs and glob cases.
struct TextFiles {
  fs::path dir = fs::path(ZT_BINARY_DIR) / "test-runs" / "training-length";
  TextFiles() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  std::string write(const std::string& name, size_t bytes) const {
    std::ofstream(dir / name) << std::string(bytes, 'x');
    return (dir / name).string();
  }
};

json text_data(const json& train) {
  return {{"train", train}, {"val", ""}, {"format", "text"}, {"seq_len", 8}};
}

}  // namespace

TEST_CASE("a schedule's total_num_steps is the length when training.steps is not given") {
  CapturedLog log;
  Config c = resolve(with({{"scheduler", kDecay200}}));
  CHECK(c.training.steps == 200);
  CHECK(c.scheduler.total_num_steps == 200);
  CHECK(c.provenance.length ==
        "length 200 steps from scheduler.params.total_num_steps (config) (no training.steps)");
  CHECK(log.warnings().empty());
  // "auto" takes the length from the training block, as before.
  json automatic = kDecay200;
  automatic["params"]["total_num_steps"] = "auto";
  c = resolve(with({{"scheduler", automatic}, {"training", {{"steps", 30}}}}));
  CHECK(c.training.steps == 30);
  CHECK(c.scheduler.total_num_steps == 30);
  c = resolve(with({}));
  CHECK(c.training.steps == 100);
  CHECK(c.provenance.length ==
        "length 100 steps by default (no training.steps, training.epochs or scheduler.params.total_num_steps)");
}

TEST_CASE("training.steps given and a schedule of another length: training.steps wins, with a warning") {
  CapturedLog log;
  ResolveOptions o = world(1);
  o.steps = 50;
  const Config c = resolve(with({{"scheduler", kDecay200}}), o);
  CHECK(c.training.steps == 50);
  CHECK(c.scheduler.total_num_steps == 200);
  CHECK(c.provenance.length == "length 50 steps from training.steps (--steps 50)");
  REQUIRE(log.warnings().size() == 1);
  CHECK(log.warnings()[0] ==
        "test.json: scheduler.params.total_num_steps: 200 disagrees with training.steps 50: the run trains 50 steps "
        "(training.steps wins) while the schedule decays to step 200");
  CapturedLog agreeing;
  resolve(with({{"scheduler", kDecay200}, {"training", {{"steps", 200}}}}));
  CHECK(agreeing.warnings().empty());
}

TEST_CASE("training.epochs: steps = epochs x windows of data.train / windows per step, rounded up") {
  TextFiles files;
  // 1001 tokens: (1001 - 1) / (2 x 8) = 62 windows; 2 ranks x 3 accumulation = 6 windows per step.
  const std::string train = files.write("train.txt", 1001);
  const json raw = {{"train_micro_batch_size_per_gpu", 2},
                    {"gradient_accumulation_steps", 3},
                    {"data", text_data(train)},
                    {"training", {{"epochs", 2}}}};
  CapturedLog log;
  Config c = resolve(raw, world(2));
  CHECK(c.training.steps == 21);  // ceil(2 x 62 / 6)
  CHECK(c.training.epochs == 2);
  CHECK(c.provenance.length == "length 21 steps from training.epochs (config) 2: 2 x 62 windows of 2 x 8 tokens / 6 "
                               "windows per step (3 x 2 ranks), rounded up");
  CHECK(log.warnings().empty());
  json half = raw;
  half["training"]["epochs"] = 0.5;
  CHECK(resolve(half, world(1)).training.steps == 11);  // ceil(0.5 x 62 / 3)
  // The warmup ratio and "auto" total follow the length.
  json with_schedule = raw;
  with_schedule["training"]["warmup_ratio"] = 0.1;
  c = resolve(with_schedule, world(2));
  CHECK(c.scheduler.total_num_steps == 21);
  CHECK(c.scheduler.warmup_num_steps == 3);  // ceil(2.1)

  // Against training.steps and a schedule: each disagreement named, with the winner.
  json both = raw;
  both["training"]["steps"] = 7;
  both["scheduler"] = kDecay200;
  CapturedLog disagree;
  c = resolve(both, world(2));
  CHECK(c.training.steps == 7);
  CHECK(disagree.count("training.epochs: 2 epochs make 21 steps, but training.steps says 7: the run trains 7 steps "
                       "(training.steps wins)") == 1);
  CHECK(disagree.count("200 disagrees with training.steps 7") == 1);
  both["training"].erase("steps");
  CapturedLog epochs_win;
  c = resolve(both, world(2));
  CHECK(c.training.steps == 21);
  CHECK(epochs_win.count("200 disagrees with training.epochs 21: the run trains 21 steps (training.epochs wins)") == 1);

  // Too little data for one window, and data that cannot be counted: errors naming the key and the file.
  json tiny = raw;
  tiny["data"]["train"] = files.write("tiny.txt", 16);
  CHECK(error_of(tiny, world(1)) ==
        "test.json: training.epochs: data.train holds 16 tokens, too few for one window of 2 x 8 + 1");
}

TEST_CASE("data.train as a list of files or a glob pattern, expanded in order") {
  TextFiles files;
  const std::string a = files.write("shard_000002.txt", 40), b = files.write("shard_000001.txt", 40);
  Config c = resolve(with({{"data", text_data((files.dir / "shard_*.txt").string())}}));
  CHECK(c.data.train == std::vector<std::string>{b, a});
  c = resolve(with({{"data", text_data(json::array({a, b}))}}));
  CHECK(c.data.train == std::vector<std::string>{a, b});  // a list keeps its order
  CHECK(to_json(c)["data"]["train"] == json::array({a, b}));
  CHECK(to_json(resolve(with({{"data", text_data(a)}})))["data"]["train"] == a);  // one file: a string, as given
  const std::string pattern = (files.dir / "fineweb_train_*.bin").string();
  CHECK(error_of(with({{"data", text_data(pattern)}})) ==
        "test.json: data.train: " + pattern + ": the pattern matches no file");
  CHECK(error_of(with({{"data", text_data(json::array({a, 3}))}})) ==
        "test.json: data.train: 3 in the list is not a path (expected a path, a glob pattern or a list of them)");
}

TEST_CASE("a resume with another batch: a length in epochs counts the epochs left at this run's batch") {
  TextFiles files;
  // 62 windows of 2 x 8 tokens; the checkpoint of 2 ranks x 3 accumulation saved at step 10 had
  // read 60 of them. On 1 rank a step reads 3: the 2 epochs end at step 10 + ceil((124 - 60) / 3).
  const json raw = {{"train_micro_batch_size_per_gpu", 2},
                    {"gradient_accumulation_steps", 3},
                    {"data", text_data(files.write("train.txt", 1001))},
                    {"training", {{"epochs", 2}}}};
  ResolveOptions o = world(1);
  o.resumed_position = [](const TrainingConfig&) { return std::optional<ResumedPosition>({10, 60.0 / 62.0}); };
  const Config c = resolve(raw, o);
  CHECK(c.training.steps == 32);
  CHECK(c.provenance.length == "length 32 steps from training.epochs (config) 2, resumed at step 10 after 0.97 "
                               "epochs: 10 + 1.03 x 62 windows of 2 x 8 tokens / 3 windows per step (3 x 1 rank), "
                               "rounded up");
  // The same batch as the saved run: the length it had.
  CHECK(resolve(raw, [&] {
          ResolveOptions same = world(2);
          same.resumed_position = o.resumed_position;
          return same;
        }()).training.steps == 21);
  // A length in steps stays as given.
  json steps = raw;
  steps["training"]["steps"] = 40;
  steps["training"].erase("epochs");
  CHECK(resolve(steps, o).training.steps == 40);
}
