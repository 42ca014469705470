#pragma once
// The input files of `zerotrain tokenize`, read in order and cut into jobs of about a megabyte for
// the worker threads: whole lines of JSON Lines, elements of a JSON array, and pieces of a text
// file (one document) cut where the tokenizer allows it (Tokenizer::cut_point), so that the pieces
// encode as the whole would.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace zt {

class Tokenizer;

struct DataInput {
  enum Kind { Text, JsonLines, JsonArray };
  std::string path;
  Kind kind = Text;
  uint64_t size = 0;
  bool by_content = false;      // its name says nothing of its format: its first bytes told it
  bool looks_like_records = false;  // a .txt or .md file read as text whose content is JSON records
};

// By name where the name says it: .jsonl and .ndjson JSON Lines; .json a JSON array when it starts
// with '[', else JSON Lines; .txt and .md text (one document). Any other name by content
// (data/content_kind.hpp): JSON lines or a JSON array of records, else text. Fails (zt::Error) on a
// file that cannot be read, an Arrow or Parquet file, and a token file.
DataInput inspect_input(const std::string& path);

struct InputJob {
  size_t index = 0;  // jobs are written in this order
  size_t file = 0;   // in the list of inputs
  DataInput::Kind kind = DataInput::Text;
  std::string bytes;           // Text: a piece of the document; JsonLines: whole lines
  uint64_t offset = 0;         // Text: where the piece starts in the file
  bool continuation = false;   // Text: not the start of the document
  uint64_t first_line = 0;     // JsonLines: the number of the first line (from 1)
  std::shared_ptr<const nlohmann::ordered_json> array;  // JsonArray: the file, parsed (keys in order)
  size_t first_element = 0, end_element = 0;    // JsonArray: the elements of this job
};

class JobReader {
public:
  JobReader(const std::vector<DataInput>& inputs, const Tokenizer& tokenizer, size_t job_bytes = size_t(1) << 20);
  ~JobReader();
  // The next job, or nothing after the last. Fails (zt::Error) naming the file when it cannot be
  // read or a JSON array does not parse.
  std::optional<InputJob> next();
  uint64_t bytes_read() const { return bytes_read_; }

private:
  InputJob new_job();  // the next in order, of the current file
  // The next job of the current file, or nothing at its end.
  std::optional<InputJob> next_elements(const DataInput& in);  // JsonArray
  std::optional<InputJob> next_piece(const DataInput& in);     // Text, JsonLines
  // Where the next piece ends in buffer_, read far enough for it; `more`: false once the file is read.
  size_t piece_end(DataInput::Kind kind, bool& more);
  bool fill(size_t at_least);  // reads more of the current file into buffer_; false at its end

  const std::vector<DataInput>& inputs_;
  const Tokenizer& tokenizer_;
  size_t job_bytes_;
  size_t file_ = 0, jobs_ = 0;
  int fd_ = -1;
  std::string buffer_;           // read and not yet given out
  uint64_t buffer_offset_ = 0;   // where buffer_ starts in the file
  uint64_t line_ = 1;            // JsonLines: the line buffer_ starts at
  bool started_ = false;         // the current file has given a job
  std::shared_ptr<const nlohmann::ordered_json> array_;
  size_t element_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace zt
