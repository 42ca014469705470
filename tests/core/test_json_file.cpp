// Reading config text: comments, duplicate keys (top level, nested, inside arrays), bad JSON.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/json_file.hpp"
#include "core/error.hpp"

using zt::parse_json;
using zt::read_json_file;

namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_json(text, "x.json");
  } catch (const zt::Error& e) {
    return e.what();
  }
  FAIL("expected a zt::Error for " << text);
  return "";
}

}  // namespace

TEST_CASE("comments are allowed in both styles") {
  auto j = parse_json(R"({
    // the stage
    "zero_optimization": {"stage": 2 /* inline */},
    /* block
       comment */ "steps_per_print": 5
  })",
                      "x.json");
  CHECK(j["zero_optimization"]["stage"] == 2);
  CHECK(j["steps_per_print"] == 5);
}

TEST_CASE("duplicate keys are errors naming the key's path") {
  CHECK(parse_error(R"({"train_batch_size": 8, "train_batch_size": 16})") == "x.json: train_batch_size: duplicate key");
  CHECK(
      parse_error(R"({"zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu", "device": "none"}}})") ==
      "x.json: zero_optimization.offload_optimizer.device: duplicate key");
  CHECK(parse_error(R"({"a": [{"x": 1}, {"y": 1, "y": 2}]})") == "x.json: a[1].y: duplicate key");
  CHECK(parse_error(R"({"a": [1, [2, 3], {"k": {"z": 0, "z": 0}}]})") == "x.json: a[2].k.z: duplicate key");
}

TEST_CASE("the same key in different objects is not a duplicate") {
  auto j = parse_json(
      R"({"fp16": {"enabled": false}, "bf16": {"enabled": true}, "l": [{"enabled": 1}, {"enabled": 2}]})", "x.json");
  CHECK(j["bf16"]["enabled"] == true);
  CHECK(j["l"][1]["enabled"] == 2);
}

TEST_CASE("invalid JSON names the source and the position") {
  auto m = parse_error("{\n  \"stage\": 1,\n  oops\n}");
  CHECK(m.rfind("x.json: invalid JSON: ", 0) == 0);
  CHECK(m.find("line 3") != std::string::npos);
  CHECK(m.find("json.exception") == std::string::npos);
  CHECK(parse_error("").rfind("x.json: invalid JSON", 0) == 0);
}

TEST_CASE("files: missing file and duplicate key in a file are reported with the path") {
  auto dir = std::filesystem::temp_directory_path() / "zt_test_json_reader";
  std::filesystem::create_directories(dir);
  auto file = (dir / "dup.json").string();
  std::ofstream(file) << "{\"fp16\": {\"enabled\": true, \"enabled\": false}}";
  try {
    zt::read_json_file(file);
    FAIL("expected an error");
  } catch (const zt::Error& e) {
    CHECK(std::string(e.what()) == file + ": fp16.enabled: duplicate key");
  }
  CHECK_THROWS_WITH(zt::read_json_file((dir / "missing.json").string()),
                    Catch::Contains("missing.json") && Catch::Contains("cannot open"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a number too large for a double names its key") {
  CHECK(parse_error(R"({"train_batch_size": 1e400})") ==
        "x.json: train_batch_size: number out of range (beyond the largest double, about 1.8e308)");
  CHECK(parse_error(R"({"optimizer": {"params": {"betas": [0.9, -1e999]}}})") ==
        "x.json: optimizer.params.betas[1]: number out of range (beyond the largest double, about 1.8e308)");
}

TEST_CASE("objects and arrays nested deeper than the limit are an error, before any value is copied") {
  auto nested = [](int levels) { return std::string(size_t(levels), '[') + std::string(size_t(levels), ']'); };
  CHECK_NOTHROW(parse_json("{\"x\": " + nested(zt::kMaxJsonDepth - 1) + "}", "x.json"));
  const std::string expected =
      "x.json: objects and arrays nested deeper than 100 levels (expected a DeepSpeed config, which needs a handful)";
  CHECK(parse_error("{\"x\": " + nested(zt::kMaxJsonDepth) + "}") == expected);
  CHECK(parse_error(nested(100000)) == expected);  // deep enough to overflow the stack when copied
}

TEST_CASE("a config file that cannot be read says why") {
  const auto dir = std::filesystem::temp_directory_path() / ("zt_json_dir_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  try {
    zt::read_json_file(dir.string());
    FAIL("a directory was read as JSON");
  } catch (const zt::Error& e) {
    CHECK(std::string(e.what()) ==
          dir.string() + ": cannot open the file for reading: is a directory, not a regular file");
  }
  std::filesystem::remove_all(dir);
}
