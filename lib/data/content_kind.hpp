#pragma once
// What a data file holds, told by its first bytes rather than its name: a token file, JSON records
// (lines of objects, or an array of them), a columnar file zerotrain does not read (Arrow,
// Parquet), or text. Training and `zerotrain tokenize` decide the same way (docs/data.md, "Which
// format a file is read as").
#include <string>
#include <string_view>

namespace zt {

enum class ContentKind { LlmcTokens, JsonLines, JsonArray, Arrow, Parquet, Text };

// Reads at most the first 64 KiB. JSON lines: the first line that is not blank is one JSON object;
// a JSON array: '[' then '{'. Throws zt::Error naming the file when it cannot be read.
ContentKind sniff_content(const std::string& path);

// "JSON lines", "a JSON array of records", ...: for messages.
std::string_view content_kind_name(ContentKind kind);
bool holds_records(ContentKind kind);  // JSON lines or a JSON array
bool is_columnar(ContentKind kind);    // Arrow or Parquet

// The extension of a path, lower case, with its dot (".jsonl"), or "".
std::string lower_extension(const std::string& path);

}  // namespace zt
