#include "ckpt/safetensors_writer.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "ckpt/synced_file.hpp"
#include "core/by_dtype.hpp"
#include "core/error.hpp"

namespace zt {

namespace {

std::string_view dtype_tag(DType t) { return by_dtype<std::string_view>(t, "F32", "BF16", "F16", "?"); }

}  // namespace

uint64_t SafetensorsSpec::bytes() const {
  uint64_t n = dtype_size(dtype);
  for (uint64_t d : shape) n *= d;
  return n;
}

SafetensorsPlan::SafetensorsPlan(std::vector<SafetensorsSpec> tensors,
                                 const std::map<std::string, std::string>& metadata, const std::string& path)
    : path_(path) {
  std::set<std::string> names;
  for (auto& t : tensors)
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      fail("{}: cannot write tensor name \"{}\" (reserved or repeated)", path, t.name);
  std::stable_sort(tensors.begin(), tensors.end(), [](const SafetensorsSpec& a, const SafetensorsSpec& b) {
    const size_t sa = dtype_size(a.dtype), sb = dtype_size(b.dtype);
    return sa != sb ? sa > sb : a.name < b.name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (auto& t : tensors) {
    header[t.name] = {
        {"dtype", dtype_tag(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes()}}};
    placed_.push_back({t, offset});
    offset += t.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  const uint64_t length = text.size();
  head_.resize(8);
  std::memcpy(head_.data(), &length, 8);  // little-endian (safetensors.cpp asserts the host is)
  head_ += text;
  for (auto& p : placed_) p.offset += head_.size();
  file_size_ = head_.size() + offset;
}

const SafetensorsPlan::Placed& SafetensorsPlan::find(const std::string& name) const {
  for (auto& p : placed_)
    if (p.spec.name == name) return p;
  fail("{}: no tensor \"{}\" in the planned file", path_, name);
}

SafetensorsFileWriter::SafetensorsFileWriter(std::string path, SafetensorsPlan plan)
    : path_(std::move(path)), plan_(std::move(plan)), written_(plan_.tensors().size(), false) {
  file_ = std::make_unique<SyncedFile>(path_ + ".tmp");
  file_->write_at(0, plan_.head().data(), plan_.head().size());
}

SafetensorsFileWriter::~SafetensorsFileWriter() {
  if (committed_) return;
  file_.reset();  // a file that was never completed is not left behind
  std::error_code ec;
  std::filesystem::remove(path_ + ".tmp", ec);
}

void SafetensorsFileWriter::write(const std::string& name, const void* data) {
  const auto& all = plan_.tensors();
  const auto& p = plan_.find(name);
  file_->write_at(p.offset, data, p.spec.bytes());
  written_[size_t(&p - all.data())] = true;
}

void SafetensorsFileWriter::commit() {
  for (size_t i = 0; i < written_.size(); ++i)
    if (!written_[i]) fail("{}: tensor \"{}\" was never written", path_, plan_.tensors()[i].spec.name);
  file_->sync();
  file_->close();
  rename_durably(path_ + ".tmp", path_);
  committed_ = true;
}

}  // namespace zt
