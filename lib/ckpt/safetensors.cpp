#include "ckpt/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <spdlog/spdlog.h>

#include "ckpt/safetensors_writer.hpp"
#include "ckpt/synced_file.hpp"
#include "core/error.hpp"
#include "core/file_type.hpp"
#include "core/quoted_bytes.hpp"

namespace zt {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

// The reference implementation refuses headers above 100 MB.
constexpr uint64_t kMaxHeaderLength = 100'000'000;

std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void pread_exact(int fd, void* dst, uint64_t bytes, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    ssize_t got = ::pread(fd, p, bytes, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail("{}: read of {} bytes at offset {} failed: {}", path, bytes, offset,
                       got == 0 ? "unexpected end of file" : std::strerror(errno));
    p += got;
    bytes -= uint64_t(got);
    offset += uint64_t(got);
  }
}

// Parses the header JSON, rejecting duplicate tensor names (nlohmann would keep the last one).
nlohmann::json parse_header(const std::string& text, const std::string& path) {
  std::set<std::string> seen;
  std::string duplicate;
  auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1) {
      auto name = parsed.get<std::string>();
      if (!seen.insert(name).second && duplicate.empty()) duplicate = name;
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, on_event);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: header is not valid JSON (header byte {}, file offset {}): {}", path, e.byte, 8 + e.byte,
         json_error_near(e.what(), text, e.byte));
  }
  if (!duplicate.empty()) fail("{}: tensor \"{}\" appears twice in the header", path, duplicate);
  return header;
}

}  // namespace

uint64_t SafetensorsEntry::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

namespace {

// One tensor's entry of the header: dtype, shape and data_offsets, judged against the data section.
SafetensorsEntry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& value,
                             uint64_t data_size, uint64_t data_start) {
  if (!value.is_object()) fail("{}: tensor \"{}\": entry is not an object", path, name);
  SafetensorsEntry e;
  e.name = name;
  if (!value.contains("dtype") || !value["dtype"].is_string()) fail("{}: tensor \"{}\": missing dtype", path, name);
  e.dtype = value["dtype"].get<std::string>();
  const size_t esize = safetensors_dtype_size(e.dtype);
  if (esize == 0) fail("{}: tensor \"{}\": unknown dtype \"{}\"", path, name, e.dtype);
  if (!value.contains("shape") || !value["shape"].is_array()) fail("{}: tensor \"{}\": missing shape", path, name);
  for (auto& d : value["shape"]) {
    if (!d.is_number_unsigned())
      fail("{}: tensor \"{}\": shape {} is not a list of sizes", path, name, value["shape"].dump());
    e.shape.push_back(d.get<uint64_t>());
  }
  const nlohmann::json offsets = value.contains("data_offsets") ? value["data_offsets"] : nlohmann::json();
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail("{}: tensor \"{}\": data_offsets must be [begin, end]", path, name);
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size)
    fail("{}: tensor \"{}\": data_offsets [{}, {}] outside the data section of {} bytes (file offset {})", path, name,
         e.begin, e.end, data_size, data_start);
  uint64_t numel = 1;
  for (uint64_t d : e.shape) {
    if (d != 0 && numel > UINT64_MAX / d)
      fail("{}: tensor \"{}\": shape {} overflows", path, name, shape_string(e.shape));
    numel *= d;
  }
  if (numel > UINT64_MAX / esize || numel * esize != e.end - e.begin)
    fail("{}: tensor \"{}\": shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}", path, name,
         shape_string(e.shape), e.dtype, numel * esize, e.begin, e.end, e.end - e.begin);
  return e;
}

// Tensors in data order, none overlapping another.
void sort_and_check_overlaps(const std::string& path, std::vector<SafetensorsEntry>& tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](auto& a, auto& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].begin < tensors[i - 1].end)
      fail("{}: tensors \"{}\" [{}, {}] and \"{}\" [{}, {}] overlap", path, tensors[i - 1].name, tensors[i - 1].begin,
           tensors[i - 1].end, tensors[i].name, tensors[i].begin, tensors[i].end);
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  std::string why;
  int error = 0;
  fd_ = open_regular_file(path, why, error);  // never blocks on a FIFO
  if (fd_ < 0) fail("{}: cannot open safetensors file: {}", path, why);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fail("{}: cannot open safetensors file: {}", path, std::strerror(err));
  }
  file_size_ = uint64_t(st.st_size);
  try {
    const nlohmann::json header = read_header();
    const uint64_t data_size = file_size_ - 8 - header_length_;
    for (auto& [name, value] : header.items()) {
      if (name != "__metadata__") {
        tensors_.push_back(parse_entry(path, name, value, data_size, data_start()));
        continue;
      }
      if (!value.is_object()) fail("{}: __metadata__ is not an object", path);
      for (auto& [k, v] : value.items()) {
        if (!v.is_string()) fail("{}: __metadata__.{} is not a string", path, k);
        metadata_[k] = v.get<std::string>();
      }
    }
    sort_and_check_overlaps(path, tensors_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

// The 8-byte length, then the JSON header it measures.
nlohmann::json SafetensorsReader::read_header() {
  if (file_size_ < 8)
    fail("{}: {} bytes is too small for a safetensors file (8-byte header length)", path_, file_size_);
  uint8_t length_bytes[8];
  pread_exact(fd_, length_bytes, 8, 0, path_);
  std::memcpy(&header_length_, length_bytes, 8);
  if (header_length_ < 2 || header_length_ > kMaxHeaderLength || header_length_ > file_size_ - 8)
    fail("{}: bad header length {} at offset 0 (file size {}, so at most {})", path_, header_length_, file_size_,
         std::min(file_size_ - 8, kMaxHeaderLength));
  std::string text(header_length_, '\0');
  pread_exact(fd_, text.data(), header_length_, 8, path_);
  if (text[0] != '{') fail("{}: header at offset 8 does not start with '{{'", path_);
  nlohmann::json header = parse_header(text, path_);
  if (!header.is_object()) fail("{}: header is not a JSON object", path_);
  return header;
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0) ::close(fd_);
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  for (auto& e : tensors_)
    if (e.name == name) return &e;
  return nullptr;
}

void SafetensorsReader::read_f32(const std::string& name, float* out) const {
  const SafetensorsEntry* e = find(name);
  if (!e) fail("{}: no tensor \"{}\"", path_, name);
  read_f32(*e, out);
}

void SafetensorsReader::read_f32(const SafetensorsEntry& e, float* out) const { read_f32(e, 0, e.numel(), out); }

void SafetensorsReader::read_f32(const SafetensorsEntry& e, uint64_t first, uint64_t count, float* out) const {
  DType type;
  if (e.dtype == "F32") type = DType::F32;
  else if (e.dtype == "BF16") type = DType::BF16;
  else if (e.dtype == "F16") type = DType::F16;
  else fail("{}: tensor \"{}\": dtype {} cannot be read as floating point (F32, BF16, F16)", path_, e.name, e.dtype);
  if (first > e.numel() || count > e.numel() - first)
    fail("{}: tensor \"{}\": elements [{}, {}) requested of {}", path_, e.name, first, first + count, e.numel());
  const uint64_t esize = dtype_size(type), offset = data_start() + e.begin + first * esize;
  if (type == DType::F32) {
    pread_exact(fd_, out, count * 4, offset, path_);
    return;
  }
  constexpr uint64_t kChunk = 1 << 16;
  std::vector<uint16_t> buffer(std::min(count, kChunk));
  for (uint64_t i = 0; i < count; i += kChunk) {
    uint64_t len = std::min(kChunk, count - i);
    pread_exact(fd_, buffer.data(), len * 2, offset + i * 2, path_);
    to_f32(type, buffer.data(), out + i, len);
  }
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsSpec> specs;
  for (auto& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
  SafetensorsFileWriter out(path, SafetensorsPlan(std::move(specs), metadata, path));
  for (auto& t : tensors) out.write(t.name, t.data);
  out.commit();
}

}  // namespace zt
