#include "tokenize/input_jobs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/file_type.hpp"
#include "data/content_kind.hpp"
#include "tokenizer/tokenizer.hpp"

namespace zt {
namespace {

int open_input(const std::string& path, uint64_t* size) {
  std::string why;
  int error = 0;
  const int fd = open_regular_file(path, why, error);
  if (fd < 0) fail("{}: cannot read: {}", path, why);
  if (size) {
    const off_t end = ::lseek(fd, 0, SEEK_END);
    if (end < 0 || ::lseek(fd, 0, SEEK_SET) < 0) fail("{}: cannot read: {}", path, std::strerror(errno));
    *size = uint64_t(end);
  }
  return fd;
}

// Appends up to n bytes read from fd; returns how many (0 at the end).
size_t read_some(int fd, const std::string& path, std::string& out, size_t n) {
  const size_t before = out.size();
  out.resize(before + n);
  ssize_t got;
  do {
    got = ::read(fd, out.data() + before, n);
  } while (got < 0 && errno == EINTR);
  if (got < 0) fail("{}: cannot read: {}", path, std::strerror(errno));
  out.resize(before + size_t(got));
  return size_t(got);
}

// The whole file, parsed; `bytes_read` counts its bytes.
std::shared_ptr<const nlohmann::ordered_json> read_json_array(const std::string& path, uint64_t& bytes_read) {
  uint64_t size = 0;
  const int fd = open_input(path, &size);
  std::string text;
  while (read_some(fd, path, text, size_t(1) << 24) > 0) {}
  ::close(fd);
  bytes_read += text.size();
  std::shared_ptr<const nlohmann::ordered_json> array;
  try {
    array = std::make_shared<const nlohmann::ordered_json>(nlohmann::ordered_json::parse(text));
  } catch (const nlohmann::ordered_json::parse_error& e) {
    refuse("{}: not valid JSON: {}", path, e.what());
  }
  if (!array->is_array()) refuse("{}: expected a JSON array of records", path);
  return array;
}

}  // namespace

namespace {

char first_character(const std::string& path) {
  const int fd = open_input(path, nullptr);
  char first = 0;
  for (std::string head; read_some(fd, path, head, 4096) > 0;) {
    const size_t at = head.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
    if (at != std::string::npos) {
      first = head[at];
      break;
    }
    head.clear();
  }
  ::close(fd);
  return first;
}

DataInput::Kind kind_of(ContentKind content) {
  if (content == ContentKind::JsonLines) return DataInput::JsonLines;
  return content == ContentKind::JsonArray ? DataInput::JsonArray : DataInput::Text;
}

}  // namespace

DataInput inspect_input(const std::string& path) {
  DataInput f;
  f.path = path;
  ::close(open_input(path, &f.size));  // the reason it cannot be read, in tokenize's words
  const ContentKind content = sniff_content(path);
  if (is_columnar(content))
    refuse("{}: {}, which zerotrain does not read: write its records as JSON lines first (Hugging Face datasets: "
         "`dataset.to_json(\"train.jsonl\")`)",
         path, content_kind_name(content));
  if (content == ContentKind::LlmcTokens)
    refuse("{}: already a token file (an llm.c header): train on it as it is (--data {})", path, path);
  const std::string ext = lower_extension(path);
  if (ext == ".jsonl" || ext == ".ndjson") {
    f.kind = DataInput::JsonLines;
  } else if (ext == ".json") {
    f.kind = first_character(path) == '[' ? DataInput::JsonArray : DataInput::JsonLines;
  } else if (ext == ".txt" || ext == ".md") {
    f.kind = DataInput::Text;
    f.looks_like_records = holds_records(content);
  } else {
    f.kind = kind_of(content);
    f.by_content = true;
  }
  return f;
}

JobReader::JobReader(const std::vector<DataInput>& inputs, const Tokenizer& tokenizer, size_t job_bytes)
    : inputs_(inputs), tokenizer_(tokenizer), job_bytes_(job_bytes) {}

JobReader::~JobReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool JobReader::fill(size_t at_least) {
  const DataInput& in = inputs_[file_];
  const size_t got = read_some(fd_, in.path, buffer_, std::max(at_least, job_bytes_));
  bytes_read_ += got;
  return got > 0;
}

InputJob JobReader::new_job() {
  InputJob job;
  job.index = jobs_++;
  job.file = file_;
  job.kind = inputs_[file_].kind;
  return job;
}

std::optional<InputJob> JobReader::next() {
  while (file_ < inputs_.size()) {
    const DataInput& in = inputs_[file_];
    std::optional<InputJob> job = in.kind == DataInput::JsonArray ? next_elements(in) : next_piece(in);
    if (job) return job;
    ++file_;
  }
  return std::nullopt;
}

std::optional<InputJob> JobReader::next_elements(const DataInput& in) {
  if (!array_) {
    array_ = read_json_array(in.path, bytes_read_);
    element_ = 0;
  }
  if (element_ >= array_->size()) {
    array_.reset();
    return std::nullopt;
  }
  InputJob job = new_job();
  job.array = array_;
  job.first_element = element_;
  element_ = job.end_element = std::min(array_->size(), element_ + 256);
  return job;
}

std::optional<InputJob> JobReader::next_piece(const DataInput& in) {
  if (fd_ < 0) {
    fd_ = open_input(in.path, nullptr);
    buffer_.clear();
    buffer_offset_ = 0;
    line_ = 1;
    started_ = false;
  }
  bool more = true;
  const size_t cut = piece_end(in.kind, more);
  if (cut == 0 && !more) {  // this file is done
    if (!started_ && in.kind == DataInput::Text) {  // an empty text file is an empty document
      InputJob job = new_job();
      job.offset = 0;
      started_ = true;
      return job;
    }
    ::close(fd_);
    fd_ = -1;
    return std::nullopt;
  }
  InputJob job = new_job();
  job.bytes = buffer_.substr(0, cut);
  buffer_.erase(0, cut);
  job.offset = buffer_offset_;
  job.continuation = started_;
  job.first_line = line_;
  buffer_offset_ += cut;
  line_ += uint64_t(std::count(job.bytes.begin(), job.bytes.end(), '\n'));
  started_ = true;
  return job;
}

// Enough for a job: job_bytes or more, up to a line end for JSON Lines and to a place the
// tokenizer may cut for text, or the rest of the file.
size_t JobReader::piece_end(DataInput::Kind kind, bool& more) {
  while (more && buffer_.size() < job_bytes_) more = fill(job_bytes_ - buffer_.size());
  if (kind == DataInput::JsonLines) {
    const size_t from = std::min(job_bytes_, buffer_.size()) - (buffer_.empty() ? 0 : 1);
    size_t line_end = buffer_.find('\n', from);
    while (line_end == std::string::npos && more) {
      more = fill(job_bytes_);
      line_end = buffer_.find('\n', from);
    }
    return line_end == std::string::npos ? buffer_.size() : line_end + 1;
  }
  if (!more) return buffer_.size();
  size_t from = job_bytes_;
  std::optional<size_t> at = tokenizer_.cut_point(buffer_, from);
  while (!at && more) {
    from = std::max(from, buffer_.size() - 1);
    more = fill(job_bytes_);
    at = tokenizer_.cut_point(buffer_, from);
  }
  return at ? *at : buffer_.size();
}

}  // namespace zt
