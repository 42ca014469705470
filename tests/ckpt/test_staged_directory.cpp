// StagedDirectory: the new files all land in DIR, whichever way they are put there (one exchange of
// two directories, or file by file where the old DIR holds a subdirectory); the old files the
// caller keeps stay, the others go, and nothing of DIR changes before install().
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "../data/temp_dir.hpp"
#include "ckpt/staged_directory.hpp"
#include "ckpt/synced_file.hpp"
#include "core/json_file.hpp"

using namespace zt;
namespace fs = std::filesystem;

namespace {

std::set<std::string> names(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A save as the model writer makes one: one weight file w1, then "config" last; the old DIR's
// weight files ("w*") that the new save does not write go, everything else stays.
void save(const std::string& dir) {
  StagedDirectory staged(dir);
  for (const char* name : {"w1", "config"})
    write_file_durably(staged.staging() + "/" + name, std::string("new ") + name);
  CHECK((!fs::exists(dir + "/config") || read_text_file(dir + "/config") == "old"));  // DIR as it was until install
  staged.install([](const std::string& name) { return name[0] != 'w'; }, "config");
}

}  // namespace

TEST_CASE("a staged directory installs every new file, keeps what the caller keeps, drops the rest",
          "[ckpt][staged]") {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  SECTION("no old directory") {
    save(dir);
    CHECK(names(dir) == std::set<std::string>{"config", "w1"});
  }
  SECTION("an old directory of files: exchanged whole") {
    fs::create_directory(dir);
    for (const char* name : {"config", "notes", "w0", "w1"}) write_file_durably(dir + "/" + name, "old");
    save(dir);
    CHECK(names(dir) == std::set<std::string>{"config", "notes", "w1"});
    for (const char* name : {"config", "w1"}) CHECK(read_text_file(dir + "/" + name) == std::string("new ") + name);
    CHECK(read_text_file(dir + "/notes") == "old");
  }
  SECTION("an old directory with a subdirectory (checkpoints beside the model): file by file") {
    fs::create_directories(dir + "/checkpoints/step_1");
    for (const char* name : {"config", "notes", "w0", "w1"}) write_file_durably(dir + "/" + name, "old");
    save(dir);
    CHECK(names(dir) == std::set<std::string>{"checkpoints", "config", "notes", "w1"});
    for (const char* name : {"config", "w1"}) CHECK(read_text_file(dir + "/" + name) == std::string("new ") + name);
    CHECK(fs::is_directory(dir + "/checkpoints/step_1"));
  }
  for (const auto& e : fs::directory_iterator(tmp.path))  // no staging directory left behind
    CHECK(e.path().filename().string().find(".zerotrain-") == std::string::npos);
}
