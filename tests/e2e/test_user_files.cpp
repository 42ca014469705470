// What zerotrain does with the user's files: an output never names an input or another output
// (refused before anything is opened for writing), every output location is created and probed
// before step 1, and a write that fails (a full disk) stops the run with an error naming the file,
// leaves whole records behind and never exits 0.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <fstream>
#include <regex>
#include <sstream>

#include "run_helpers.hpp"
#include "tb_reader.hpp"

using namespace zt::test;
namespace fs = std::filesystem;

namespace {

std::string copy_of_corpus(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  fs::copy_file(std::string(ZT_SOURCE_DIR) + "/data/tinytext/train.txt", path);
  return path;
}

// zerotrain alone (no launcher) under a file size limit of `blocks` 512-byte blocks, with SIGXFSZ
// ignored so that a write past the limit fails with EFBIG as on a full disk. Open MPI keeps its
// shared-memory files small this way (self transport, no PMIx shared store). The output goes
// through a pipe (a pipe has no size limit); the exit status is read from a file.
int run_with_file_size_limit(int blocks, const std::string& args, const std::string& dir) {
  const std::string status = dir + "/status";
  const std::string inner = "trap '' XFSZ; ulimit -f " + std::to_string(blocks) +
                            " && env OMPI_MCA_btl=self PMIX_MCA_gds=hash " + ZT_ZEROTRAIN + " " + args +
                            " 2>&1; echo \\$? >" + status;
  run_command("sh -c \"" + inner + "\" | cat", dir + "/out.log");
  std::ifstream in(status);
  int code = -1;
  in >> code;
  return code;
}

// A training step was logged ("step     1/300 | loss ...").
bool trained(const std::string& log) { return std::regex_search(log, std::regex(R"(step +\d+/\d+ \|)")); }

// The step the run said it stopped after because an output failed, or -1.
int64_t stopped_after(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(error: stopped after step (\d+): )"))) return -1;
  return std::stoll(m[1]);
}

// Every line of a JSON Lines file parses; returns how many there are.
size_t whole_json_lines(const std::string& path) {
  const std::string text = read_file(path);
  REQUIRE(!text.empty());
  CHECK(text.back() == '\n');
  std::istringstream in(text);
  size_t n = 0;
  for (std::string line; std::getline(in, line); ++n) CHECK_NOTHROW(nlohmann::json::parse(line));
  return n;
}

}  // namespace

TEST_CASE("an output that names an input is refused before anything is written, and the input is kept",
          "[e2e][user-files]") {
  auto dir = fresh_dir("output-is-input");
  const std::string data = copy_of_corpus(dir, "data.txt"), original = read_file(data);
  const std::string config = dir + "/ds.json";
  fs::copy_file(std::string(ZT_SOURCE_DIR) + "/configs/zero2.json", config);
  const std::string config_text = read_file(config);
  const std::string model = dir + "/model.json";
  fs::copy_file(std::string(ZT_SOURCE_DIR) + "/configs/models/toy.json", model);
  const std::string model_text = read_file(model);
  fs::create_symlink("data.txt", dir + "/link.txt");
  fs::create_hard_link(data, dir + "/hard.txt");

  struct Case {
    std::string name, args, output_key, input_key;
  };
  const std::vector<Case> cases = {
      {"metrics = data", "--data " + data + " --set training.metrics=" + data, "training.metrics", "data.train"},
      {"metrics = config", "--set training.metrics=" + config, "training.metrics", "--config"},
      {"metrics = model", "--model " + model + " --set training.metrics=" + model, "training.metrics", "--model"},
      // Another spelling of the same file: through a symbolic link, behind "..", a hard link.
      {"through a link", "--data " + data + " --set training.metrics=" + dir + "/new/../link.txt", "training.metrics",
       "data.train"},
      {"hard link", "--data " + data + " --set training.metrics=" + dir + "/hard.txt", "training.metrics",
       "data.train"},
      {"val data", "--set data.val=" + data + " --set training.metrics=" + data, "training.metrics", "data.val"},
      {"log_dir holds it", "--data " + dir + "/rank0.log --set training.log_dir=" + dir, "training.log_dir",
       "data.train"},
      {"csv file",
       "--set data.val=" + dir + "/csv/run/Train_Samples_train_loss.csv --set csv_monitor.enabled=true" +
           " --set csv_monitor.output_path=" + dir + "/csv --set csv_monitor.job_name=run",
       "csv_monitor", "data.val"},
  };
  fs::create_directories(dir + "/csv/run");
  { std::ofstream(dir + "/csv/run/Train_Samples_train_loss.csv") << "hello\n"; }
  { std::ofstream(dir + "/rank0.log") << "hello\n"; }
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.name) {
      // The first through the launcher: the ranks agree, and one of them says it.
      const std::string zerotrain = &c == &cases.front() ? launch(2) : std::string(ZT_ZEROTRAIN);
      const std::string out =
          run_status(zerotrain + " --config " + config + " --steps 3 " + c.args, dir + "/out.log", 2);
      INFO(out);
      // "OUTPUT_KEY 'path' names the same file as INPUT_KEY 'path': writing it would destroy the input; ..."
      const size_t at = out.find("error: " + c.output_key + " '");
      REQUIRE(at != std::string::npos);
      const std::string line = out.substr(at, out.find('\n', at) - at);
      CHECK(line.find(" " + c.input_key + " '") != std::string::npos);
      CHECK(occurrences(out, "writing it would destroy the input") == 1);  // said once, for all ranks
      CHECK_FALSE(trained(out));
      CHECK(read_file(data) == original);
      CHECK(read_file(config) == config_text);
      CHECK(read_file(model) == model_text);
      CHECK(read_file(dir + "/rank0.log") == "hello\n");
      CHECK(read_file(dir + "/csv/run/Train_Samples_train_loss.csv") == "hello\n");
    }
  }
}

TEST_CASE("save_final may not overwrite the weights init_from reads, nor share a file with another output",
          "[e2e][user-files]") {
  auto dir = fresh_dir("output-collisions");
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 1 --set training.save_final=" + dir + "/w",
                      dir + "/save.log") == 0);
  const std::string weights = read_file(dir + "/w/model.safetensors");
  REQUIRE(!weights.empty());

  std::string out =
      run_status(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 1 --set training.save_final=" + dir +
                     "/w --set training.init_from=" + dir + "/w/model.safetensors",
                 dir + "/out.log", 2);
  INFO(out);
  CHECK(out.find("training.save_final '" + dir + "/w' would write '" + dir + "/w/model.safetensors', which is " +
                 "training.init_from") != std::string::npos);
  CHECK(read_file(dir + "/w/model.safetensors") == weights);

  // Two outputs: the metrics file inside save_final's directory under a name save_final writes.
  out = run_status(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 1 --set training.save_final=" + dir +
                       "/w --set training.metrics=" + dir + "/w/config.json",
                   dir + "/out2.log", 2);
  INFO(out);
  CHECK(out.find("training.save_final '" + dir + "/w' would write '" + dir + "/w/config.json', which is " +
                 "training.metrics") != std::string::npos);
  CHECK(out.find("the two outputs would overwrite each other") != std::string::npos);

  // DeepSpeed configs often give every monitor the same directory: their files differ, so that is fine.
  run_status(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 2 --set csv_monitor.enabled=true" +
                 " --set tensorboard.enabled=true --set csv_monitor.output_path=" + dir +
                 "/mon --set tensorboard.output_path=" + dir + "/mon",
             dir + "/out3.log", 0);
}

TEST_CASE("an output location that cannot be made fails at set-up, naming the key", "[e2e][user-files]") {
  auto dir = fresh_dir("output-not-a-directory");
  { std::ofstream(dir + "/afile") << "a file\n"; }
  struct Case {
    std::string key, value, expected;
  };
  const std::vector<Case> cases = {
      {"training.save_final", dir + "/afile/final",
       "training.save_final: cannot create directory '" + dir + "/afile/final': '" + dir +
           "/afile' is a regular file, "
           "not a directory"},
      {"training.metrics", dir + "/afile/m.jsonl",
       "training.metrics: cannot create directory '" + dir + "/afile': '" + dir + "/afile' is a regular file"},
      {"training.log_dir", dir + "/afile/logs", "training.log_dir: cannot create directory '" + dir + "/afile/logs'"},
      {"training.checkpoint_dir", dir + "/afile",
       "training.checkpoint_dir: cannot create directory '" + dir + "/afile'"},
      {"training.metrics", dir, "training.metrics: '" + dir + "' is a directory (expected a file to write)"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.key << "=" << c.value) {
      // Many steps: the error must come at set-up, not after them.
      const std::string zerotrain = &c == &cases.front() ? launch(2) : std::string(ZT_ZEROTRAIN);
      const std::string out =
          run_status(zerotrain + " --config zero2 --steps 100000 --set " + c.key + "=" + c.value, dir + "/out.log", 2);
      INFO(out);
      CHECK(occurrences(out, c.expected) == 1);
      CHECK_FALSE(trained(out));
    }
  }
  // The probe leaves nothing behind in a directory it could write.
  REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 1 --set training.metrics=" + dir +
                          "/new/m.jsonl --set training.log_dir=" + dir + "/logs",
                      dir + "/ok.log") == 0);
  std::set<std::string> written;  // the metrics file and the resolved config beside it, no probe
  for (const auto& e : fs::directory_iterator(dir + "/new")) written.insert(e.path().filename().string());
  CHECK(written == std::set<std::string>{"m.jsonl", "m.jsonl.config.json"});
  CHECK(std::distance(fs::directory_iterator(dir + "/logs"), fs::directory_iterator()) == 1);
}

TEST_CASE("a final write that fails removes its temporary files, names the file and exits non-zero",
          "[e2e][user-files]") {
  auto dir = fresh_dir("save-final-full");
  // 100 blocks = 50 KiB: the probe's few bytes fit, the toy model's 500 KB of weights do not.
  int code = run_with_file_size_limit(100, "--config zero2 --steps 3 --set training.save_final=" + dir + "/final", dir);
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  // Written beside its place (.final.zerotrain-PID) and never put there.
  CHECK(out.find("training.save_final: " + dir + "/.final.zerotrain-") != std::string::npos);
  CHECK(out.find("/model.safetensors.tmp: write of") != std::string::npos);
  CHECK(out.find("File too large; the partial files were removed") != std::string::npos);
  CHECK(fs::is_directory(dir + "/final"));  // made and probed before the run
  CHECK(fs::is_empty(dir + "/final"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().rfind(".final", 0) != 0);
}

TEST_CASE("a full disk stops the run after the current step with an error naming the file, whole records kept",
          "[e2e][user-files]") {
  auto dir = fresh_dir("disk-full");
  const std::string many_steps = "--config zero2 --steps 300 --set training.logging_steps=1";

  SECTION("training.metrics") {
    // The limit leaves room for the resolved config written beside the metrics (its size follows
    // the paths in it) and for the setup record and a few steps: sizes measured on a one-step run.
    REQUIRE(run_command(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 1 --set training.metrics=" + dir +
                            "/probe.jsonl",
                        dir + "/probe.log") == 0);
    const size_t largest =
        std::max(fs::file_size(dir + "/probe.jsonl"), fs::file_size(dir + "/probe.jsonl.config.json"));
    const int blocks = int(largest / 512) + 2;
    int code = run_with_file_size_limit(blocks, many_steps + " --set training.metrics=" + dir + "/m.jsonl", dir);
    std::string out = read_file(dir + "/out.log");
    INFO(out);
    CHECK(code == 1);
    CHECK(occurrences(out, "training.metrics: cannot write '" + dir + "/m.jsonl': File too large") >= 1);
    const int64_t k = stopped_after(out);
    CHECK(k > 1);
    CHECK(k < 300);
    CHECK(out.find("step " + std::to_string(k + 1) + "/") == std::string::npos);
    const size_t lines = whole_json_lines(dir + "/m.jsonl");
    CHECK(lines >= 2);                // the setup record and a step or more
    CHECK(lines <= size_t(k) + 1);    // no step after the failure
  }
  // A monitor writing under dir/<folder>/run past a limit of `blocks`: the run ends with status 1
  // after a step or more, naming the file (`file`, a pattern) that could not be written.
  auto monitor_stops = [&](const std::string& monitor, const std::string& folder, int blocks, const std::string& file) {
    int code =
        run_with_file_size_limit(blocks,
                                 many_steps + " --set " + monitor + ".enabled=true --set " + monitor +
                                     ".output_path=" + dir + "/" + folder + " --set " + monitor + ".job_name=run",
                                 dir);
    std::string out = read_file(dir + "/out.log");
    INFO(out);
    CHECK(code == 1);
    CHECK(std::regex_search(
        out, std::regex(monitor + ": cannot write '" + dir + "/" + folder + "/run/" + file + "': File too large")));
    CHECK(stopped_after(out) > 1);
    CHECK(stopped_after(out) < 300);
  };
  SECTION("csv_monitor") {
    monitor_stops("csv_monitor", "csv", 1, "[A-Za-z_]+\\.csv");
    for (const auto& file : fs::directory_iterator(dir + "/csv/run")) {
      const std::string text = read_file(file.path().string());
      INFO(file.path() << ":\n" << text);
      CHECK(text.back() == '\n');
      CHECK(std::regex_match(text, std::regex(R"(step,[a-z_]+\n(\d+,[-+.e\d]+\n)*)")));
    }
  }
  SECTION("tensorboard") {
    monitor_stops("tensorboard", "tb", 2, "events\\.out\\.tfevents\\.[^']+");
    std::vector<fs::path> files(fs::directory_iterator(dir + "/tb/run"), fs::directory_iterator());
    REQUIRE(files.size() == 1);
    std::vector<TbEvent> events;
    REQUIRE_NOTHROW(events = read_tb_events(read_file(files[0].string())));  // every record whole
    CHECK(events.size() > 2);
  }
  SECTION("/dev/full") {
    // A character device is written as it is (never truncated or probed); its first write fails.
    const std::string out = run_status(
        std::string(ZT_ZEROTRAIN) + " " + many_steps + " --set training.metrics=/dev/full", dir + "/out.log", 1);
    INFO(out);
    CHECK(out.find("training.metrics: cannot write '/dev/full': No space left on device") != std::string::npos);
    CHECK(stopped_after(out) == 1);
  }
}

TEST_CASE("a data file truncated while the run reads it stops every rank with an error naming it",
          "[e2e][user-files]") {
  auto dir = fresh_dir("data-truncated");
  const std::string data = copy_of_corpus(dir, "data.txt");
  const auto size = fs::file_size(data);
  const std::string log = dir + "/out.log";
  Background job(launch(2) + " --config zero2 --steps 100000 --set training.logging_steps=1 --data " + data, log);
  REQUIRE(wait_for_text(log, "step     3/", 120));
  fs::resize_file(data, 100);  // what `> data.txt` or a rewrite in progress does
  const int code = job.wait(60);
  std::string out = read_file(log);
  INFO(out);
  CHECK(code != 0);
  CHECK(code != -1);              // it ended
  CHECK(code != 128 + SIGBUS);    // and not by a bus error
  CHECK(out.find(data + ": the data file shrank while training read it (" + std::to_string(size) +
                 " bytes when opened, 100 now") != std::string::npos);
}
