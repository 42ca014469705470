// The monitors a run writes or prints beside the metrics file: csv_monitor's CSV files (DeepSpeed's
// layout), tensorboard's event file and comms_logger's per-collective table, all checked against
// the metrics file.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

#include "run_helpers.hpp"
#include "tb_reader.hpp"

using namespace zt::test;

namespace {

struct Csv {
  std::string header;
  std::vector<std::pair<int64_t, double>> rows;  // samples seen, value
};

Csv read_csv(const std::string& path) {
  Csv csv;
  std::istringstream in(read_file(path));
  std::getline(in, csv.header);
  for (std::string line; std::getline(in, line);) {
    const auto comma = line.find(',');
    REQUIRE(comma != std::string::npos);
    csv.rows.emplace_back(std::stoll(line.substr(0, comma)), std::stod(line.substr(comma + 1)));
  }
  return csv;
}

// The metrics file writes 9 significant digits: a CSV value shown that way reads back as the same number.
double to_9_digits(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", x);
  return std::stod(text);
}

// The per-step record of one event: one row per step, x = step x train_batch_size, the metrics
// file's value.
void check_steps(const Csv& csv, const std::vector<nlohmann::json>& steps, size_t first_row, int64_t batch,
                 const std::function<double(const nlohmann::json&)>& value) {
  REQUIRE(csv.rows.size() >= first_row + steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& [x, v] = csv.rows[first_row + i];
    INFO("row " << first_row + i << ": " << x << "," << v << " metrics " << steps[i].dump());
    CHECK(x == steps[i]["step"].get<int64_t>() * batch);
    CHECK(to_9_digits(v) == value(steps[i]));
  }
}

}  // namespace

TEST_CASE("csv_monitor writes DeepSpeed's per-event CSV files, matching the metrics file, and appends",
          "[e2e][monitor]") {
  auto dir = fresh_dir("csv-monitor");
  const std::string out_dir = dir + "/csv", files = out_dir + "/run1/";
  // Batch 6 = micro 2 x accumulation 3, so samples (6 per step) differ from steps and tokens.
  const std::string common = std::string(ZT_ZEROTRAIN) + " --config zero0 --set training.micro_batch_size=2" +
                             " --set training.gradient_accumulation_steps=3 --set training.eval_batches=1" +
                             " --set csv_monitor.enabled=true --set csv_monitor.output_path=" + out_dir +
                             " --set csv_monitor.job_name=run1";
  const int64_t batch = 6;
  int code = run_command(common + " --steps 12 --set training.eval_interval=5 --set wall_clock_breakdown=true" +
                             " --set training.metrics=" + dir + "/first.jsonl",
                         dir + "/first.log");
  INFO(read_file(dir + "/first.log"));
  REQUIRE(code == 0);
  Metrics first = read_metrics(dir + "/first.jsonl");
  REQUIRE(first.steps.size() == 12);
  REQUIRE(first.setup["dtype"] != "fp16");

  Csv loss = read_csv(files + "Train_Samples_train_loss.csv");
  CHECK(loss.header == "step,train_loss");
  CHECK(loss.rows.size() == 12);
  check_steps(loss, first.steps, 0, batch, [](const nlohmann::json& s) { return s["loss"].get<double>(); });
  Csv lr = read_csv(files + "Train_Samples_lr.csv");
  CHECK(lr.header == "step,lr");
  check_steps(lr, first.steps, 0, batch, [](const nlohmann::json& s) { return s["lr"].get<double>(); });
  for (const std::string part : {"forward", "backward", "step"}) {
    INFO(part);
    Csv t = read_csv(files + "Train_Samples_elapsed_time_ms_" + part + ".csv");
    CHECK(t.header == "step,elapsed_time_ms_" + part);
    CHECK(t.rows.size() == 12);
    check_steps(t, first.steps, 0, batch, [&](const nlohmann::json& s) { return s["time_ms"][part].get<double>(); });
  }
  // Evaluations after steps 5 and 10 and after the last.
  Csv val = read_csv(files + "Train_Samples_val_loss.csv");
  CHECK(val.header == "step,val_loss");
  REQUIRE(first.evals.size() == 3);
  REQUIRE(val.rows.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(val.rows[i].first == first.evals[i]["step"].get<int64_t>() * batch);
    CHECK(to_9_digits(val.rows[i].second) == first.evals[i]["val_loss"].get<double>());
  }
  CHECK(first.evals.back()["step"] == 12);
  CHECK_FALSE(std::filesystem::exists(files + "Train_Samples_loss_scale.csv"));  // fp16 only

  // A second run, in fp16, into the same files: its rows follow the first run's, with no second
  // header, and now there is a loss scale to record. No wall_clock_breakdown, no evaluation.
  run_ok(common + " --steps 3 --set fp16.enabled=true --set bf16.enabled=false" +
             " --set training.eval_interval=0 --set training.metrics=" + dir + "/second.jsonl",
         dir + "/second.log");
  Metrics second = read_metrics(dir + "/second.jsonl");
  REQUIRE(second.setup["dtype"] == "fp16");
  REQUIRE(second.steps.size() == 3);
  loss = read_csv(files + "Train_Samples_train_loss.csv");
  CHECK(loss.header == "step,train_loss");
  CHECK(loss.rows.size() == 15);  // a second header would not parse as a row
  check_steps(loss, first.steps, 0, batch, [](const nlohmann::json& s) { return s["loss"].get<double>(); });
  check_steps(loss, second.steps, 12, batch, [](const nlohmann::json& s) { return s["loss"].get<double>(); });
  Csv scale = read_csv(files + "Train_Samples_loss_scale.csv");
  CHECK(scale.header == "step,loss_scale");
  CHECK(scale.rows.size() == 3);
  check_steps(scale, second.steps, 0, batch, [](const nlohmann::json& s) { return s["loss_scale"].get<double>(); });
  CHECK(read_csv(files + "Train_Samples_elapsed_time_ms_forward.csv").rows.size() == 12);
  CHECK(read_csv(files + "Train_Samples_val_loss.csv").rows.size() == 3);
}

TEST_CASE("a monitor directory that cannot be created stops every rank at start-up, naming it",
          "[e2e][monitor]") {
  for (const std::string monitor : {"csv_monitor", "tensorboard"}) {
    INFO(monitor);
    auto dir = fresh_dir(monitor + "-bad-path");
    { std::ofstream(dir + "/a-file") << "not a directory\n"; }
    int code = run_command(launch(2) + " --config zero1 --steps 2 --set " + monitor + ".enabled=true --set " +
                               monitor + ".output_path=" + dir + "/a-file --set " + monitor + ".job_name=run1",
                           dir + "/out.log");
    std::string out = read_file(dir + "/out.log");
    INFO(out);
    CHECK(code != 0);
    const std::string message = monitor + ": cannot create directory '" + dir + "/a-file/run1'";
    CHECK(out.find(message) != std::string::npos);
    CHECK(out.find(message) == out.rfind(message));  // said once, for all ranks
    CHECK(out.find("| loss ") == std::string::npos);     // no training
  }
}

TEST_CASE("csv_monitor without output_path writes into ./csv_monitor/<job_name>", "[e2e][monitor]") {
  auto dir = fresh_dir("csv-monitor-default-path");
  int code =
      run_command("cd " + dir + " && " + ZT_ZEROTRAIN + " --config zero0 --steps 2 --set csv_monitor.enabled=true",
                  dir + "/out.log");
  INFO(read_file(dir + "/out.log"));
  REQUIRE(code == 0);
  Csv loss = read_csv(dir + "/csv_monitor/DeepSpeedJobName/Train_Samples_train_loss.csv");
  CHECK(loss.header == "step,train_loss");
  CHECK(loss.rows.size() == 2);
}

namespace {

struct CommRow {
  uint64_t calls = 0, bytes = 0;
  double ms = 0;
  std::string bandwidth;
};

// The comms_logger table's rows, by collective. Every line is tagged with its rank by launch.sh.
std::map<std::string, CommRow> comm_table(const std::string& out) {
  const std::regex row(
      R"(\[0\] .*info:   (all_reduce|reduce_scatter|all_gather|broadcast|barrier) +(\d+) +(\d+) +\d+(\.\d)? )"
    R"([KMG]?B +(\d+\.\d{3}) +(\S+)\n)");
  std::map<std::string, CommRow> rows;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), row); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    rows[m[1]] = {std::stoull(m[2]), std::stoull(m[3]), std::stod(m[5]), m[6]};
  }
  return rows;
}

uint64_t summed(const Metrics& m, const std::string& kind) {
  uint64_t total = 0;
  for (const auto& s : m.steps) total += s["comm"][kind].get<uint64_t>();
  return total;
}

}  // namespace

TEST_CASE("comms_logger prints rank 0's calls, bytes and time per collective, as the metrics file counts them",
          "[e2e][monitor][mpi]") {
  auto dir = fresh_dir("comms-logger");
  std::string out = run_ok(launch(2) + " --config zero2 --steps 4 --set training.logging_steps=2" +
                               " --set comms_logger.enabled=true --set comms_logger.verbose=true" +
                               " --set training.metrics=" + dir + "/metrics.jsonl",
                           dir + "/out.log");
  INFO(out);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == 4);

  const std::string title = "comms_logger: collectives of rank 0 over 4 training steps";
  CHECK(out.find(title) != std::string::npos);
  CHECK(out.find(title) == out.rfind(title));  // rank 0 only
  auto rows = comm_table(out);
  // ZeRO-2 on 2 ranks: gradients reduce-scattered, parameters all-gathered, the loss all-reduced.
  for (const std::string kind : {"reduce_scatter", "all_gather", "all_reduce"}) {
    INFO(kind);
    REQUIRE(rows.count(kind) == 1);
    const CommRow& r = rows[kind];
    CHECK(r.calls >= 4);
    CHECK(r.bytes == summed(m, kind));
    CHECK(r.bytes > 0);
    REQUIRE(r.ms > 0);
    // GB/s = bytes / time, within the rounding of the printed time (3 decimals) and bandwidth (4 digits).
    const double gbps = std::stod(r.bandwidth);
    CHECK(std::abs(gbps * r.ms * 1e6 - double(r.bytes)) <= double(r.bytes) * (0.0005 / r.ms + 0.0006));
  }
  if (summed(m, "broadcast") == 0) CHECK(rows.count("broadcast") == 0);  // only kinds that were called
  for (const auto& [kind, r] : rows) CHECK(r.calls > 0);

  // verbose: the printed steps (1, 2 and 4) each get a line with that step's bytes per collective.
  for (int64_t step : {1, 2, 4}) {
    const auto& rec = m.steps[size_t(step - 1)];
    INFO("step " << step << " " << rec.dump());
    const std::regex line(R"(\[0\] .*comms step )" + std::to_string(step) + R"(: (.*)\n)");
    std::smatch found;
    REQUIRE(std::regex_search(out, found, line));
    for (const std::string kind : {"reduce_scatter", "all_gather", "all_reduce"}) {
      const std::regex part(kind + R"( \d+ calls?, (\d+) bytes, \d+\.\d{3} ms)");
      std::smatch p;
      const std::string text = found[1];
      REQUIRE(std::regex_search(text, p, part));
      CHECK(std::stoull(p[1]) == rec["comm"][kind].get<uint64_t>());
    }
  }
  CHECK(out.find("comms step 3:") == std::string::npos);  // not a printed step

  // prof_all false with prof_ops: only those collectives are shown.
  out = run_ok(launch(2) + " --config zero2 --steps 2 --set comms_logger.enabled=true" +
                   " --set comms_logger.prof_all=false --set 'comms_logger.prof_ops=[\"all_gather\"]'" +
                   " --set training.metrics=" + dir + "/filtered.jsonl",
               dir + "/filtered.log");
  INFO(out);
  rows = comm_table(out);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows.count("all_gather") == 1);
  CHECK(rows["all_gather"].bytes == summed(read_metrics(dir + "/filtered.jsonl"), "all_gather"));
  CHECK(out.find("comms step") == std::string::npos);  // not verbose
}

TEST_CASE("comms_logger disabled prints no table", "[e2e][monitor]") {
  auto dir = fresh_dir("comms-logger-off");
  int code = run_command(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 2", dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("comms_logger: collectives") == std::string::npos);
  CHECK(out.find("comms step") == std::string::npos);
}

namespace {

// The files in `dir`.
std::vector<std::filesystem::path> event_files(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  return files;
}

// The scalars of one tag: (step, value) in file order.
std::vector<std::pair<int64_t, float>> scalars(const std::vector<TbEvent>& events, const std::string& tag) {
  std::vector<std::pair<int64_t, float>> found;
  for (const auto& e : events)
    for (const auto& [t, v] : e.values)
      if (t == tag) found.emplace_back(e.step, v);
  return found;
}

}  // namespace

TEST_CASE("tensorboard writes one event file of the csv_monitor scalars, matching the metrics file",
          "[e2e][monitor]") {
  auto dir = fresh_dir("tensorboard");
  const std::string out_dir = dir + "/tb";
  // Batch 6 = micro 2 x accumulation 3, so samples (6 per step) differ from steps.
  int code = run_command(std::string(ZT_ZEROTRAIN) + " --config zero0 --set training.micro_batch_size=2" +
                             " --set training.gradient_accumulation_steps=3 --set training.eval_batches=1" +
                             " --steps 12 --set training.eval_interval=5 --set wall_clock_breakdown=true" +
                             " --set tensorboard.enabled=true --set tensorboard.output_path=" + out_dir +
                             " --set tensorboard.job_name=run1 --set training.metrics=" + dir + "/metrics.jsonl",
                         dir + "/out.log");
  INFO(read_file(dir + "/out.log"));
  REQUIRE(code == 0);
  const int64_t batch = 6;
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == 12);
  REQUIRE(m.setup["dtype"] != "fp16");

  auto files = event_files(out_dir + "/run1");
  REQUIRE(files.size() == 1);
  const std::string name = files[0].filename().string();
  INFO(name);
  CHECK(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d{10}\..+)")));
  std::vector<TbEvent> events;
  REQUIRE_NOTHROW(events = read_tb_events(read_file(files[0].string())));
  REQUIRE(!events.empty());
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].values.empty());
  for (size_t i = 1; i < events.size(); ++i) {
    CHECK(events[i].values.size() == 1);  // one scalar per Event, as TensorBoard's writers do
    CHECK(events[i].wall_time >= events[0].wall_time);
  }

  auto check_steps = [&](const std::string& tag, const std::string& key) {
    INFO(tag);
    auto s = scalars(events, tag);
    REQUIRE(s.size() == m.steps.size());
    for (size_t i = 0; i < s.size(); ++i) {
      INFO("step " << i + 1 << " metrics " << m.steps[i].dump());
      CHECK(s[i].first == m.steps[i]["step"].get<int64_t>() * batch);
      if (!key.empty()) CHECK(s[i].second == float(m.steps[i][key].get<double>()));
    }
  };
  check_steps("Train/Samples/train_loss", "loss");
  check_steps("Train/Samples/lr", "lr");
  for (const std::string part : {"forward", "backward", "step"}) {
    check_steps("Train/Samples/elapsed_time_ms_" + part, "");
    for (const auto& [step, v] : scalars(events, "Train/Samples/elapsed_time_ms_" + part)) CHECK(v >= 0.0f);
  }
  CHECK(scalars(events, "Train/Samples/loss_scale").empty());  // fp16 only

  // Evaluations after steps 5 and 10 and after the last.
  auto val = scalars(events, "Train/Samples/val_loss");
  REQUIRE(m.evals.size() == 3);
  REQUIRE(val.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(val[i].first == m.evals[i]["step"].get<int64_t>() * batch);
    CHECK(val[i].second == float(m.evals[i]["val_loss"].get<double>()));
  }
  CHECK(val.back().first == 12 * batch);
  // Nothing else: 12 steps of 5 scalars, 3 evaluations, the file_version record.
  CHECK(events.size() == 1 + 12 * 5 + 3);
}

TEST_CASE("tensorboard in fp16 records the loss scale; without output_path it writes ./tensorboard/<job_name>",
          "[e2e][monitor]") {
  auto dir = fresh_dir("tensorboard-default-path");
  run_ok("cd " + dir + " && " + ZT_ZEROTRAIN + " --config zero0 --steps 2 --set tensorboard.enabled=true" +
             " --set fp16.enabled=true --set bf16.enabled=false --set training.eval_interval=0" +
             " --set training.metrics=" + dir + "/metrics.jsonl",
         dir + "/out.log");
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.setup["dtype"] == "fp16");
  REQUIRE(m.steps.size() == 2);
  auto files = event_files(dir + "/tensorboard/DeepSpeedJobName");
  REQUIRE(files.size() == 1);
  auto events = read_tb_events(read_file(files[0].string()));
  auto scale = scalars(events, "Train/Samples/loss_scale");
  REQUIRE(scale.size() == 2);
  for (size_t i = 0; i < 2; ++i) CHECK(scale[i].second == float(m.steps[i]["loss_scale"].get<double>()));
  CHECK(scalars(events, "Train/Samples/train_loss").size() == 2);
  CHECK(scalars(events, "Train/Samples/elapsed_time_ms_step").empty());  // no wall_clock_breakdown
  CHECK(scalars(events, "Train/Samples/val_loss").empty());              // no evaluation
}

