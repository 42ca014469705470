#include "tokenizer/tokenizer_files.hpp"

#include <filesystem>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {

namespace fs = std::filesystem;

TokenizerFiles locate_tokenizer_files(const std::string& path) {
  std::error_code ec;
  TokenizerFiles f;
  if (fs::is_directory(path, ec)) {
    const fs::path dir = path;
    f.dir = path;
    if (fs::exists(dir / "tokenizer.json", ec)) {
      f.json = (dir / "tokenizer.json").string();
    } else if (fs::exists(dir / "vocab.json", ec) && fs::exists(dir / "merges.txt", ec)) {
      f.vocab = (dir / "vocab.json").string();
      f.merges = (dir / "merges.txt").string();
    } else {
      fail("{}: no tokenizer here: neither tokenizer.json nor vocab.json with merges.txt", path);
    }
    return f;
  }
  const fs::path dir = fs::path(path).parent_path();
  f.dir = dir.string();
  const fs::path name = fs::path(path).filename();
  if (name == "merges.txt") {
    f.vocab = (dir / "vocab.json").string();
    f.merges = path;
  } else if (name == "vocab.json" && fs::exists(dir / "merges.txt", ec)) {
    f.vocab = path;
    f.merges = (dir / "merges.txt").string();
  } else {
    f.json = path;
  }
  return f;
}

TokenizerIdentity identify_tokenizer(const std::string& path, const Tokenizer* loaded) {
  const TokenizerFiles files = locate_tokenizer_files(path);
  TokenizerIdentity t;
  t.source = fs::absolute(path).lexically_normal().string();
  auto add = [&](const char* role, const std::string& file) {
    t.files.push_back({role, fs::absolute(file).lexically_normal().string(), sha256_of_file(file)});
  };
  if (!files.json.empty()) {
    add("tokenizer.json", files.json);
  } else {
    add("vocab.json", files.vocab);
    add("merges.txt", files.merges);
  }
  if (loaded) {
    t.kind = std::string(loaded->kind());
    t.vocab_size = loaded->vocab_size();
  }
  return t;
}

}  // namespace zt
