#include "tokenizer/tokenizer_files.hpp"

#include <filesystem>

#include "core/sha256.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {

namespace fs = std::filesystem;

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
