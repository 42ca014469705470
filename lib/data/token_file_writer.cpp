#include "data/token_file_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "data/llmc_format.hpp"
#include "data/sample_index.hpp"
#include "data/token_file_info.hpp"

namespace zt {

struct TokenFileWriter::Output {
  std::string temp, final_path;
  int fd = -1;
  int64_t bytes = 0;  // written after the header
};

// One file finish() writes: the ranges of the appended tokens it takes, in order.
struct TokenFileWriter::Part {
  std::string path;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // [begin, end) of the appended tokens
  std::vector<int64_t> offsets;  // where its samples start, then its token count
  bool in_place = false;         // PATH itself: its ranges move down inside the temporary file
  int64_t tokens() const { return offsets.empty() ? 0 : offsets.back(); }
};

namespace {

[[noreturn]] void fail_io(const std::string& path, const char* what) {
  fail("cannot {} '{}': {}", what, path, std::strerror(errno));
}

// All `bytes` at `offset` through io (::pwrite or ::pread), going on after EINTR and short counts;
// a call that moves nothing fails with `at_end` as the reason.
template <class Byte, class Io>
void transfer_at(Io io, int fd, const std::string& path, Byte* p, size_t bytes, off_t offset, int at_end,
                 const char* what) {
  while (bytes > 0) {
    const ssize_t n = io(fd, p, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = at_end;
      fail_io(path, what);
    }
    p += n;
    bytes -= size_t(n);
    offset += n;
  }
}

void write_at(int fd, const std::string& path, const void* data, size_t bytes, off_t offset) {
  transfer_at(::pwrite, fd, path, static_cast<const uint8_t*>(data), bytes, offset, ENOSPC, "write");
}

void read_at(int fd, const std::string& path, void* data, size_t bytes, off_t offset) {
  transfer_at(::pread, fd, path, static_cast<uint8_t*>(data), bytes, offset, EIO, "read back");
}

int create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_io(path, "create");
  return fd;
}

void write_header(int fd, const std::string& path, int32_t magic, int32_t version, int64_t count) {
  int32_t header[llmc::kHeaderInts] = {};
  header[0] = magic;
  header[1] = version;
  header[2] = int32_t(count);
  write_at(fd, path, header, sizeof(header), 0);
}

// A file beside the tokens at `path` (a mask, a record): its temporary file renamed into place when
// it was written, else any earlier one removed, so that it cannot describe other tokens.
void place_beside(const std::string& token_path, const std::string& path, bool written, const char* what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (written) {
    fs::rename(path + ".tmp", path, ec);
    if (ec) fail("cannot rename '{}.tmp' to '{}': {}", path, path, ec.message());
  } else if (fs::exists(path, ec)) {
    fs::remove(path, ec);
    if (ec) fail("cannot remove '{}', the {} of an earlier {}: {}", path, what, token_path, ec.message());
  }
}

// n bytes from `from` at src to `to` at dst (after the headers), a chunk at a time; within one
// file only downwards (dst <= src), where each chunk is read before anything after it is written.
void copy_bytes(int from_fd, const std::string& from, int to_fd, const std::string& to, uint64_t src, uint64_t dst,
                uint64_t n) {
  if (from_fd == to_fd && src == dst) return;
  std::vector<uint8_t> chunk(size_t(std::min<uint64_t>(n, uint64_t(1) << 22)));
  for (uint64_t done = 0; done < n;) {
    const size_t c = size_t(std::min<uint64_t>(chunk.size(), n - done));
    read_at(from_fd, from, chunk.data(), c, off_t(llmc::kHeaderBytes + src + done));
    write_at(to_fd, to, chunk.data(), c, off_t(llmc::kHeaderBytes + dst + done));
    done += c;
  }
}

void flush_and_close(int fd, const std::string& path) {
  if (::fsync(fd) != 0) fail_io(path, "flush");
  if (::close(fd) != 0) fail_io(path, "close");
}

}  // namespace

TokenFileWriter::TokenFileWriter(std::string path, int64_t vocab_size)
    : path_(std::move(path)), token_bytes_(vocab_size <= 65536 ? 2 : 4) {
  for (const std::string& final_path : {path_, llmc::mask_path_of(path_)}) {
    Output out{final_path + ".tmp", final_path};
    out.fd = create(out.temp);
    temporaries_.push_back(out.temp);
    outputs_.push_back(out);
    write_header(out.fd, out.temp, 0, 0, 0);  // a placeholder until finish()
  }
}

TokenFileWriter::~TokenFileWriter() {
  for (Output& out : outputs_)
    if (out.fd >= 0) ::close(out.fd);
  for (const std::string& temp : temporaries_) std::remove(temp.c_str());
}

int64_t TokenFileWriter::documents() const { return int64_t(document_starts_.size()); }

void TokenFileWriter::write_all(Output& out, const void* data, size_t bytes) {
  write_at(out.fd, out.temp, data, bytes, off_t(llmc::kHeaderBytes + size_t(out.bytes)));
  out.bytes += int64_t(bytes);
}

void TokenFileWriter::append(std::span<const int32_t> tokens, std::span<const uint8_t> counted,
                             std::span<const int64_t> document_starts) {
  if (count_ + int64_t(tokens.size()) > llmc::kMaxTokens)
    fail("{}: more than {} tokens, the most an llm.c header counts: split the input into several outputs", path_,
         llmc::kMaxTokens);
  if (count_ == 0 && !tokens.empty() && (document_starts.empty() || document_starts.front() != 0))
    document_starts_.push_back(0);
  for (int64_t start : document_starts) {
    const int64_t at = count_ + start;
    if (start < 0 || start >= int64_t(tokens.size()) || (!document_starts_.empty() && at < document_starts_.back()))
      fail("{}: a document start at {} of {} appended tokens is out of order", path_, start, tokens.size());
    if (document_starts_.empty() || at > document_starts_.back()) document_starts_.push_back(at);
  }
  buffer_.resize(tokens.size() * size_t(token_bytes_));
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint32_t t = uint32_t(tokens[i]);
    if (token_bytes_ == 2) {
      const uint16_t v = uint16_t(t);
      std::memcpy(buffer_.data() + 2 * i, &v, 2);
    } else {
      std::memcpy(buffer_.data() + 4 * i, &t, 4);
    }
  }
  write_all(outputs_[0], buffer_.data(), buffer_.size());
  if (counted.empty()) {
    buffer_.assign(tokens.size(), 1);
    write_all(outputs_[1], buffer_.data(), buffer_.size());
  } else {
    for (uint8_t c : counted) masked_ |= c == 0;
    write_all(outputs_[1], counted.data(), counted.size());
  }
  count_ += int64_t(tokens.size());
}

int TokenFileWriter::create_temporary(const std::string& path) {
  const std::string temp = path + ".tmp";
  const int fd = create(temp);
  temporaries_.push_back(temp);
  return fd;
}

void TokenFileWriter::write_info(const File& file) {
  TokenFileInfo info;
  info.tokens = file.tokens;
  info.token_bytes = token_bytes_;
  if (!file.mask_path.empty()) info.loss_mask = std::filesystem::path(file.mask_path).filename().string();
  if (!file.index_path.empty()) info.sample_index = std::filesystem::path(file.index_path).filename().string();
  info.samples = file.samples;
  info.tokenizer = *tokenizer_;
  const int fd = create_temporary(file.info_path);
  const std::string text = token_file_info_json(info);
  write_at(fd, file.info_path + ".tmp", text.data(), text.size(), 0);
  flush_and_close(fd, file.info_path + ".tmp");
}

void TokenFileWriter::write_index(const File& file, const std::vector<int64_t>& offsets, bool pairs) {
  const std::string temp = file.index_path + ".tmp";
  const int fd = create_temporary(file.index_path);
  auto header = sample_index_header(int64_t(offsets.size()) - 1, file.tokens);
  if (pairs) header[0] = llmc::kPairIndexMagic;
  write_at(fd, temp, header.data(), sizeof(header), 0);
  write_at(fd, temp, offsets.data(), offsets.size() * sizeof(int64_t), off_t(llmc::kHeaderBytes));
  flush_and_close(fd, temp);
}

std::vector<TokenFileWriter::Part> TokenFileWriter::plan_parts(const Outputs& o) const {
  std::vector<Part> parts(o.val_path.empty() ? 1 : 2);
  parts[0].path = path_;
  parts[0].in_place = true;
  if (!o.val_path.empty()) parts[1].path = o.val_path;
  auto add = [](Part& p, int64_t begin, int64_t end) {
    if (begin == end) return;
    if (!p.ranges.empty() && p.ranges.back().second == begin) p.ranges.back().second = end;
    else p.ranges.emplace_back(begin, end);
  };
  if (o.val_path.empty()) {
    add(parts[0], 0, count_);
  } else if (o.val_documents) {
    for (size_t k = 0; k < document_starts_.size(); ++k) {
      const int64_t end = k + 1 < document_starts_.size() ? document_starts_[k + 1] : count_;
      add(parts[o.val_documents(int64_t(k)) ? 1 : 0], document_starts_[k], end);
    }
  } else {
    const int64_t cut = count_ - std::clamp<int64_t>(o.val_tail_tokens, 0, count_);
    add(parts[0], 0, cut);
    add(parts[1], cut, count_);
  }
  // A part's samples start where its ranges do and where a document starts inside one.
  for (Part& p : parts) {
    int64_t at = 0;
    for (auto [begin, end] : p.ranges) {
      p.offsets.push_back(at);
      auto s = std::upper_bound(document_starts_.begin(), document_starts_.end(), begin);
      for (; s != document_starts_.end() && *s < end; ++s) p.offsets.push_back(at + (*s - begin));
      at += end - begin;
    }
    p.offsets.push_back(at);
  }
  return parts;
}

void TokenFileWriter::write_part(const Part& part) {
  const int32_t magic = token_bytes_ == 2 ? llmc::kMagic16 : llmc::kMagic32;
  const int32_t version = token_bytes_ == 2 ? llmc::kVersion16 : llmc::kVersion32;
  for (int k = 0; k < 2; ++k) {
    if (k == 1 && !masked_) continue;
    const Output& src = outputs_[size_t(k)];
    const uint64_t unit = k == 0 ? uint64_t(token_bytes_) : 1;
    const std::string path = k == 0 ? part.path : llmc::mask_path_of(part.path);
    const int fd = part.in_place ? src.fd : create_temporary(path);
    const std::string temp = part.in_place ? src.temp : temporaries_.back();
    uint64_t at = 0;
    for (auto [begin, end] : part.ranges) {
      copy_bytes(src.fd, src.temp, fd, temp, uint64_t(begin) * unit, at, uint64_t(end - begin) * unit);
      at += uint64_t(end - begin) * unit;
    }
    write_header(fd, temp, k == 0 ? magic : llmc::kMaskMagic, k == 0 ? version : llmc::kMaskVersion, part.tokens());
    if (::ftruncate(fd, off_t(llmc::kHeaderBytes + at)) != 0) fail_io(temp, "truncate");
    if (part.in_place) {
      if (::fsync(fd) != 0) fail_io(temp, "flush");
    } else {
      flush_and_close(fd, temp);
    }
  }
}

std::vector<TokenFileWriter::File> TokenFileWriter::finish(const Outputs& o) {
  namespace fs = std::filesystem;
  std::vector<Part> parts = plan_parts(o);
  std::vector<File> files;
  // The split first: it copies from the temporary file that PATH's part then rewrites in place.
  for (auto part = parts.rbegin(); part != parts.rend(); ++part) {
    write_part(*part);
    File f{part->path, masked_ ? llmc::mask_path_of(part->path) : "", tokenizer_ ? llmc::info_path_of(part->path) : "",
           o.samples ? llmc::index_path_of(part->path) : "", part->tokens(), int64_t(part->offsets.size()) - 1};
    if (o.samples) write_index(f, part->offsets, o.pairs);
    if (tokenizer_) write_info(f);
    files.insert(files.begin(), f);
  }
  for (Output& out : outputs_) {
    if (::close(out.fd) != 0) fail_io(out.temp, "close");
    out.fd = -1;
  }
  // Into place: the split first, then PATH; each with its mask, index and record, or none left.
  for (auto f = files.rbegin(); f != files.rend(); ++f) {
    std::error_code ec;
    fs::rename(f->path + ".tmp", f->path, ec);
    if (ec) fail("cannot rename '{}.tmp' to '{}': {}", f->path, f->path, ec.message());
    place_beside(f->path, llmc::mask_path_of(f->path), masked_, "loss mask");
    place_beside(f->path, llmc::index_path_of(f->path), o.samples, "sample index");
    place_beside(f->path, llmc::info_path_of(f->path), tokenizer_.has_value(), "record");
  }
  for (const std::string& temp : temporaries_) std::remove(temp.c_str());
  temporaries_.clear();
  return files;
}

}  // namespace zt
