#include "data/tokenizer_identity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/error.hpp"
#include "core/sha256.hpp"

namespace zt {

namespace fs = std::filesystem;

namespace {

const TokenizerFile* file_of_role(const TokenizerIdentity& t, const std::string& role) {
  for (const TokenizerFile& f : t.files)
    if (f.role == role) return &f;
  return nullptr;
}

std::optional<TokenizerFiles> tokenizer_files_in(const std::string& dir) {
  std::error_code ec;
  const fs::path d = dir;
  TokenizerFiles f;
  f.dir = dir;
  if (fs::is_regular_file(d / "tokenizer.json", ec)) {
    f.json = (d / "tokenizer.json").string();
  } else if (fs::is_regular_file(d / "vocab.json", ec) && fs::is_regular_file(d / "merges.txt", ec)) {
    f.vocab = (d / "vocab.json").string();
    f.merges = (d / "merges.txt").string();
  } else {
    return std::nullopt;
  }
  return f;
}

}  // namespace

bool has_tokenizer_files(const std::string& dir) { return !dir.empty() && tokenizer_files_in(dir); }

TokenizerFiles locate_tokenizer_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (std::optional<TokenizerFiles> f = tokenizer_files_in(path)) return *f;
    fail("{}: no tokenizer here: neither tokenizer.json nor vocab.json with merges.txt", path);
  }
  TokenizerFiles f;
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

bool same_tokenizer(const TokenizerIdentity& a, const TokenizerIdentity& b) {
  if (a.files.empty() || a.files.size() != b.files.size()) return false;
  return std::all_of(a.files.begin(), a.files.end(), [&](const TokenizerFile& f) {
    const TokenizerFile* other = file_of_role(b, f.role);
    return other && other->sha256 == f.sha256;
  });
}

std::string describe(const TokenizerIdentity& t) {
  const std::string about = describe_files(t);
  return about.empty() ? t.source : fmt::format("{} ({})", t.source, about);
}

std::string describe_files(const TokenizerIdentity& t) {
  std::string about;
  if (!t.kind.empty()) about += t.kind;
  if (t.vocab_size > 0) about += fmt::format("{}{} ids", about.empty() ? "" : ", ", t.vocab_size);
  std::string hashes;
  for (const TokenizerFile& f : t.files)
    hashes += fmt::format("{}{} sha256 {}", hashes.empty() ? "" : ", ", f.role, f.sha256.substr(0, 12));
  if (!hashes.empty()) about += (about.empty() ? "" : "; ") + hashes;
  return about;
}

std::string tokenizer_directory(const TokenizerIdentity& t) {
  return t.files.empty() ? "" : std::filesystem::path(t.files.front().path).parent_path().string();
}

bool tokenizer_files_unchanged(const TokenizerIdentity& t) {
  if (t.files.empty()) return false;
  for (const TokenizerFile& f : t.files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f.path, ec)) return false;
    try {
      if (sha256_of_file(f.path) != f.sha256) return false;
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

nlohmann::json to_json(const TokenizerIdentity& t) {
  nlohmann::json files = nlohmann::json::array();
  for (const TokenizerFile& f : t.files) files.push_back({{"role", f.role}, {"path", f.path}, {"sha256", f.sha256}});
  return {{"source", t.source}, {"kind", t.kind}, {"vocab_size", t.vocab_size}, {"files", files}};
}

TokenizerIdentity tokenizer_identity_from_json(const nlohmann::json& j, const std::string& where) {
  auto string_at = [&](const nlohmann::json& o, const char* key, const std::string& at) {
    if (!o.is_object() || !o.contains(key) || !o.at(key).is_string())
      fail("{}: {}.{}: expected a string", where, at, key);
    return o.at(key).get<std::string>();
  };
  TokenizerIdentity t;
  t.source = string_at(j, "source", "tokenizer");
  t.kind = string_at(j, "kind", "tokenizer");
  if (!j.contains("vocab_size") || !j.at("vocab_size").is_number_integer())
    fail("{}: tokenizer.vocab_size: expected an integer", where);
  t.vocab_size = j.at("vocab_size").get<int64_t>();
  if (!j.contains("files") || !j.at("files").is_array() || j.at("files").empty())
    fail("{}: tokenizer.files: expected a list of the tokenizer's files", where);
  for (size_t i = 0; i < j.at("files").size(); ++i) {
    const std::string at = fmt::format("tokenizer.files[{}]", i);
    const nlohmann::json& f = j.at("files")[i];
    t.files.push_back({string_at(f, "role", at), string_at(f, "path", at), string_at(f, "sha256", at)});
  }
  return t;
}

}  // namespace zt
