// Paths and text from the user: a monitor's job_name stays inside its output_path, a path cannot
// hold a NUL, and keys and values are echoed with their control characters escaped.
#include "config_test_support.hpp"

#include <filesystem>
#include <unistd.h>

#include "config/config.hpp"
#include "config/diagnostics.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("a monitor job_name is one path component") {
  for (const std::string monitor : {"csv_monitor", "tensorboard"}) {
    for (const std::string& job :
         std::vector<std::string>{"../../evil", "/etc", "a/b", "..", ".", "", std::string("a\0b", 3)}) {
      INFO(monitor << " " << job);
      CHECK(error_of(with({{monitor, {{"enabled", true}, {"job_name", job}}}})) ==
            "test.json: " + monitor + ".job_name: " + zt::show(json(job)) +
                " is not a directory name (expected one path component: not empty, not \".\" or \"..\", no '/')");
    }
  }
  const Config c = resolve(with({{"csv_monitor", {{"job_name", "run-7..b"}}}, {"tensorboard", {{"job_name", "..x"}}}}));
  CHECK(c.csv_monitor.job_name == "run-7..b");
  CHECK(c.tensorboard.job_name == "..x");
}

TEST_CASE("a path holding a NUL character is an error naming the key") {
  const std::string bad("a\0b", 3);
  CHECK(error_of(with({{"training", {{"metrics", bad}}}})) ==
        "test.json: training.metrics: \"a\\u0000b\" holds a NUL character (expected a path)");
  CHECK(error_of(with({{"data", {{"train", bad}}}})) ==
        "test.json: data.train: \"a\\u0000b\" holds a NUL character (expected a path)");
}

TEST_CASE("keys and values with control characters are escaped in warnings and errors") {
  CapturedLog log;
  resolve(with({{"x\n[rank 0] info: forged\x1b[31m", 1}}));
  REQUIRE(log.warnings().size() == 1);
  CHECK(log.warnings()[0] == "test.json: x\\n[rank 0] info: forged\\x1b[31m: unknown key (ignored)");
  ResolveOptions o = world(1);
  o.overrides = {"zero_optimization.st\nage=3"};
  CHECK(error_of(with({}), o) ==
        "--set zero_optimization.st\\nage=3: zero_optimization.st\\nage: unknown key; did you mean stage?");
}

TEST_CASE("--config naming a directory says it is one") {
  const auto dir = std::filesystem::temp_directory_path() / ("zt_config_dir_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  try {
    find_config_file(dir.string());
    FAIL("a directory was taken for a config");
  } catch (const zt::Error& e) {
    CHECK(std::string(e.what()) ==
          "--config " + dir.string() +
              ": is a directory, not a config file (expected a DeepSpeed JSON file or a preset "
              "name)");
  }
  std::filesystem::remove_all(dir);
}
