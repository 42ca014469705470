#include "data/data_files.hpp"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "data/file_token_dataset.hpp"
#include "data/llmc_format.hpp"
#include "data/sample_index.hpp"
#include "data/synthetic_dataset.hpp"

namespace zt {

namespace {

bool is_pattern(const std::string& entry) { return entry.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t found{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &found);
  std::vector<std::string> paths;
  for (size_t i = 0; rc == 0 && i < found.gl_pathc; ++i) paths.emplace_back(found.gl_pathv[i]);
  globfree(&found);
  if (rc == GLOB_NOMATCH || (rc == 0 && paths.empty())) fail("{}: the pattern matches no file", pattern);
  if (rc != 0) fail("{}: the pattern cannot be expanded (out of memory or a read error)", pattern);
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

std::vector<std::string> expand_data_files(const std::vector<std::string>& entries) {
  std::vector<std::string> files;
  for (const std::string& entry : entries) {
    if (!is_pattern(entry)) {
      files.push_back(entry);
      continue;
    }
    for (std::string& path : glob_files(entry)) files.push_back(std::move(path));
  }
  return files;
}

std::string val_file_of(const std::string& token_file) {
  if (token_file.size() > 4 && token_file.compare(token_file.size() - 4, 4, ".bin") == 0)
    return token_file.substr(0, token_file.size() - 4) + ".val.bin";
  return token_file + ".val";
}

int64_t count_tokens(const std::string& source, TokenFormat format, std::string_view tokenizer) {
  if (format == TokenFormat::Auto) format = detect_token_format(source, tokenizer);
  if (format == TokenFormat::Synthetic) return parse_synthetic_spec(source).tokens;
  return FileTokenDataset::count_tokens(source, format);
}

int64_t count_tokens(const std::vector<std::string>& sources, TokenFormat format, std::string_view tokenizer) {
  int64_t total = 0;
  for (const std::string& source : sources) total += count_tokens(source, format, tokenizer);
  return total;
}

std::vector<int64_t> read_sample_offsets(const std::vector<std::string>& sources, TokenFormat format,
                                         std::string_view tokenizer) {
  std::vector<int64_t> offsets;
  for (size_t k = 0; k < sources.size(); ++k) {
    const std::string& source = sources[k];
    const TokenFormat f = format == TokenFormat::Auto ? detect_token_format(source, tokenizer) : format;
    std::error_code ec;
    const std::string index = llmc::index_path_of(source);
    const bool has = f == TokenFormat::LlmC && std::filesystem::exists(index, ec);
    if (k > 0 && has != !offsets.empty())
      fail("{} has {} sample index and {} has {}: the files of one stream are all record data (samples) or none is",
           source, has ? "a" : "no", sources.front(), has ? "none" : "one");
    if (!has) continue;
    const std::vector<int64_t> own = read_sample_index(index, source, FileTokenDataset::count_tokens(source, f));
    const int64_t at = offsets.empty() ? 0 : offsets.back();
    if (!offsets.empty()) offsets.pop_back();
    for (int64_t o : own) offsets.push_back(at + o);
  }
  return offsets;
}

}  // namespace zt
