// Bad input reaches a multi-rank job: one clear message, a non-zero exit, no rank left behind.
#include <catch2/catch.hpp>

#include <fstream>

#include "run_helpers.hpp"

using namespace zt::test;

static size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("a missing data file stops every rank with one message", "[e2e][failure]") {
  auto dir = fresh_dir("missing-data");
  int code = run_command(launch(2) + " --config zero2 --steps 3 --data " + dir + "/nope.bin", dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(occurrences(out, dir + "/nope.bin: data file not found") == 1);
}

TEST_CASE("a corrupt llm.c token file is named with what is wrong", "[e2e][failure]") {
  auto dir = fresh_dir("corrupt-data");
  {
    std::ofstream f(dir + "/bad.bin", std::ios::binary);
    int32_t header[256] = {20240520, 1, 1000};  // claims 1000 tokens, holds 10
    f.write(reinterpret_cast<const char*>(header), sizeof(header));
    f.write("0123456789abcdefghij", 20);
  }
  int code = run_command(launch(2) + " --config zero1 --steps 3 --data " + dir + "/bad.bin", dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(occurrences(out, dir + "/bad.bin") >= 1);
  CHECK(out.find("error") != std::string::npos);
}

TEST_CASE("resume latest with no checkpoint stops before training, saying why", "[e2e][failure]") {
  auto dir = fresh_dir("resume");
  int code = run_command(launch(2) + " --config zero2 --steps 3 --set training.resume=latest" +
                             " --set training.checkpoint_dir=" + dir + "/ckpt",
                         dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  CHECK(occurrences(out, "training.resume: \"latest\": no checkpoint in " + dir + "/ckpt") == 1);
  CHECK(out.find("step ") == std::string::npos);  // nothing trained from scratch in its place
}

TEST_CASE("--dry-run prints the per-rank memory plan and allocates nothing", "[e2e][dry-run]") {
  auto dir = fresh_dir("dry-run");
  int code = run_command(launch(4) + " --config zero3 --dry-run --model gpt2-124m", dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("memory plan per rank: ZeRO stage 3, 4 ranks") != std::string::npos);
  CHECK(out.find("16Ψ/N") != std::string::npos);
  CHECK(out.find("step ") == std::string::npos);  // no training
}
