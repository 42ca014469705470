#include "data/token_file_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "data/llmc_format.hpp"
#include "data/token_file_info.hpp"

namespace zt {

struct TokenFileWriter::Output {
  std::string temp, final_path;
  int fd = -1;
  int64_t bytes = 0;  // written after the header
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

void TokenFileWriter::write_all(Output& out, const void* data, size_t bytes) {
  write_at(out.fd, out.temp, data, bytes, off_t(llmc::kHeaderBytes + size_t(out.bytes)));
  out.bytes += int64_t(bytes);
}

void TokenFileWriter::append(std::span<const int32_t> tokens, std::span<const uint8_t> counted) {
  if (count_ + int64_t(tokens.size()) > llmc::kMaxTokens)
    fail("{}: more than {} tokens, the most an llm.c header counts: split the input into several outputs", path_,
         llmc::kMaxTokens);
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

void TokenFileWriter::write_info(const File& file) {
  TokenFileInfo info;
  info.tokens = file.tokens;
  info.token_bytes = token_bytes_;
  if (!file.mask_path.empty()) info.loss_mask = std::filesystem::path(file.mask_path).filename().string();
  info.tokenizer = *tokenizer_;
  const std::string temp = file.info_path + ".tmp";
  const int fd = create(temp);
  temporaries_.push_back(temp);
  const std::string text = token_file_info_json(info);
  write_at(fd, temp, text.data(), text.size(), 0);
  if (::fsync(fd) != 0) fail_io(temp, "flush");
  if (::close(fd) != 0) fail_io(temp, "close");
}

std::vector<TokenFileWriter::File> TokenFileWriter::finish(const std::string& tail_path, int64_t tail_tokens) {
  namespace fs = std::filesystem;
  tail_tokens = tail_path.empty() ? 0 : std::min(tail_tokens, count_);
  const int64_t head_tokens = count_ - tail_tokens;
  const int32_t magic = token_bytes_ == 2 ? llmc::kMagic16 : llmc::kMagic32;
  const int32_t version = token_bytes_ == 2 ? llmc::kVersion16 : llmc::kVersion32;
  std::vector<File> files;
  auto finish_part = [&](const std::string& path, int64_t first, int64_t count, bool is_tail) {
    const std::string mask_path = llmc::mask_path_of(path);
    for (int k = 0; k < 2; ++k) {
      Output& src = outputs_[size_t(k)];
      const size_t unit = k == 0 ? size_t(token_bytes_) : 1;
      if (k == 1 && !masked_) continue;
      std::string temp = src.temp;
      int fd = src.fd;
      if (is_tail) {  // copy the tail out of the head's file
        temp = (k == 0 ? path : mask_path) + ".tmp";
        fd = create(temp);
        temporaries_.push_back(temp);
        std::vector<uint8_t> chunk(size_t(1) << 22);
        for (int64_t done = 0; done < count * int64_t(unit);) {
          const size_t n = size_t(std::min<int64_t>(int64_t(chunk.size()), count * int64_t(unit) - done));
          read_at(src.fd, src.temp, chunk.data(), n, off_t(llmc::kHeaderBytes) + off_t(first) * off_t(unit) + done);
          write_at(fd, temp, chunk.data(), n, off_t(llmc::kHeaderBytes) + done);
          done += int64_t(n);
        }
      }
      write_header(fd, temp, k == 0 ? magic : llmc::kMaskMagic, k == 0 ? version : llmc::kMaskVersion, count);
      if (!is_tail && ::ftruncate(fd, off_t(llmc::kHeaderBytes) + off_t(count) * off_t(unit)) != 0)
        fail_io(temp, "truncate");
      if (::fsync(fd) != 0) fail_io(temp, "flush");
      if (is_tail) ::close(fd);
    }
    files.push_back({path, masked_ ? mask_path : "", tokenizer_ ? llmc::info_path_of(path) : "", count});
    if (tokenizer_) write_info(files.back());
  };
  if (tail_tokens > 0) finish_part(tail_path, head_tokens, tail_tokens, true);
  finish_part(path_, 0, head_tokens, false);
  for (Output& out : outputs_) {
    if (::close(out.fd) != 0) fail_io(out.temp, "close");
    out.fd = -1;
  }
  // Into place: the tail first, then the head; masks beside them or, without a mask, none left.
  std::error_code ec;
  for (auto it = files.begin(); it != files.end(); ++it) {
    const File& f = *it;
    fs::rename(f.path + ".tmp", f.path, ec);
    if (ec) fail("cannot rename '{}.tmp' to '{}': {}", f.path, f.path, ec.message());
    place_beside(f.path, llmc::mask_path_of(f.path), masked_, "loss mask");
    place_beside(f.path, llmc::info_path_of(f.path), tokenizer_.has_value(), "record");
  }
  for (const std::string& temp : temporaries_) std::remove(temp.c_str());
  temporaries_.clear();
  if (tail_tokens > 0) std::swap(files[0], files[1]);  // the head first
  return files;
}

}  // namespace zt
