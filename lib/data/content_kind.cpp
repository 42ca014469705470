#include "data/content_kind.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/llmc_format.hpp"
#include "data/read_only_file.hpp"

namespace zt {

namespace {

constexpr size_t kSniffBytes = size_t(64) << 10;
constexpr std::string_view kBlank = " \t\r\n";
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

constexpr size_t kLongestFirstLine = size_t(64) << 20;

// The first line that is not blank (without its line break), read as far as it goes (up to
// kLongestFirstLine: a record may be a long conversation); `skip` bytes of the file come first.
std::string first_line(const ReadOnlyFile& file, std::string_view head, size_t skip) {
  const size_t start = head.find_first_not_of(kBlank);
  if (start == std::string_view::npos) return "";
  std::string line(head.substr(start));
  size_t end = line.find('\n');
  uint64_t at = skip + head.size();
  while (end == std::string::npos && at < file.size() && line.size() < kLongestFirstLine) {
    const size_t n = std::min<uint64_t>(kSniffBytes, file.size() - at);
    const size_t before = line.size();
    line.resize(before + n);
    file.read(at, n, line.data() + before);
    at += n;
    end = line.find('\n', before);
  }
  return end == std::string::npos ? line : line.substr(0, end);
}

}  // namespace

ContentKind sniff_content(const std::string& path) {
  const ReadOnlyFile file(path);
  std::string bytes(std::min(file.size(), kSniffBytes), '\0');
  file.read(0, bytes.size(), bytes.data());
  std::string_view head = bytes;
  int32_t magic = 0;
  if (head.size() >= sizeof(magic)) std::memcpy(&magic, head.data(), sizeof(magic));
  if (magic == llmc::kMagic16 || magic == llmc::kMagic32) return ContentKind::LlmcTokens;
  if (starts_with(head, "ARROW1") || starts_with(head, "\xFF\xFF\xFF\xFF")) return ContentKind::Arrow;
  if (starts_with(head, "PAR1")) return ContentKind::Parquet;
  const size_t skip = starts_with(head, kByteOrderMark) ? kByteOrderMark.size() : 0;
  head.remove_prefix(skip);
  const size_t first = head.find_first_not_of(kBlank);
  if (first != std::string_view::npos && head[first] == '{' &&
      nlohmann::json::parse(first_line(file, head, skip), nullptr, false).is_object())
    return ContentKind::JsonLines;
  if (first != std::string_view::npos && head[first] == '[') {
    const size_t next = head.find_first_not_of(kBlank, first + 1);
    if (next != std::string_view::npos && head[next] == '{') return ContentKind::JsonArray;
  }
  return ContentKind::Text;
}

std::string_view content_kind_name(ContentKind kind) {
  constexpr std::string_view kNames[] = {"an llm.c token file", "JSON lines", "a JSON array of records",
                                         "an Apache Arrow file", "a Parquet file", "text"};  // in enum order
  return kNames[size_t(kind)];
}

bool holds_records(ContentKind kind) { return kind == ContentKind::JsonLines || kind == ContentKind::JsonArray; }

bool is_columnar(ContentKind kind) { return kind == ContentKind::Arrow || kind == ContentKind::Parquet; }

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace zt
