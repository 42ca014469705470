#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "core/log.hpp"

using namespace zt;

namespace {

// Logs one line as `rank` (of a world of `world`: nothing in a line depends on it) into a fresh log
// directory and returns what rank's file holds.
std::string logged_line(int rank, int world) {
  auto dir = std::filesystem::temp_directory_path() /
             ("zt_test_log_" + std::to_string(::getpid()) + "_" + std::to_string(rank) + "_" + std::to_string(world));
  std::filesystem::remove_all(dir);
  auto previous = spdlog::default_logger();
  LogOptions o;
  o.rank = rank;
  o.level = "info";
  o.log_dir = dir.string();
  init_logging(o);
  spdlog::info("hello {}", 42);
  spdlog::default_logger()->flush();
  spdlog::set_default_logger(previous);  // closes the file
  std::ifstream in(dir / ("rank" + std::to_string(rank) + ".log"));
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove_all(dir);
  return text.str();
}

}  // namespace

TEST_CASE("every log line carries time, rank and level, whatever the world size", "[log]") {
  const std::regex line(R"(\[\d\d:\d\d:\d\d\.\d\d\d\]\[rank (\d+)\] info: hello 42\n)");
  for (auto [rank, world] : {std::pair{0, 1}, std::pair{0, 4}, std::pair{3, 4}}) {
    INFO("rank " << rank << " of " << world);
    std::string text = logged_line(rank, world);
    std::smatch m;
    REQUIRE(std::regex_match(text, m, line));
    CHECK(std::stoi(m[1]) == rank);
  }
}

TEST_CASE("log levels are parsed by name", "[log]") {
  CHECK(parse_log_level("warn") == spdlog::level::warn);
  CHECK(parse_log_level("off") == spdlog::level::off);
  CHECK_THROWS_WITH(parse_log_level("loud"), Catch::Contains("--log-level loud: expected one of"));
}
