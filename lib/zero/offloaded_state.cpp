#include "zero/offloaded_state.hpp"

#include <cstring>
#include <fmt/format.h>

#include "core/error.hpp"

namespace zt {

namespace {

// A sub-group's record [master | m | v], padded for direct I/O.
uint64_t record_bytes(size_t sub_group) { return direct_aligned(uint64_t(sub_group) * 3 * sizeof(float)); }
size_t sub_group_count(size_t size, size_t sub_group) { return size == 0 ? 0 : (size + sub_group - 1) / sub_group; }
// Records held in host memory: buffer_count, at least one, at most one per sub-group.
size_t slot_count(size_t sub_groups, int buffer_count) {
  return size_t(std::max(1, std::min<int>(buffer_count, int(std::max<size_t>(1, sub_groups)))));
}

constexpr const char* kNvmeKey = "zero_optimization.offload_optimizer.nvme_path";

class MemoryState final : public OffloadedState {
public:
  MemoryState(size_t size, size_t sub_group, Device& device, MemSpace space)
      : OffloadedState(size, sub_group),
        master_(device, space, MemCategory::Optimizer, size),
        m_(device, space, MemCategory::Optimizer, size),
        v_(device, space, MemCategory::Optimizer, size) {}
  AdamState acquire(size_t k) override {
    const size_t a = sub_group(k).begin;
    return {master_.data() + a, m_.data() + a, v_.data() + a};
  }
  void release(size_t, bool) override {}

private:
  Buffer<float> master_, m_, v_;
};

class FileState final : public OffloadedState {
public:
  FileState(size_t size, size_t sub_group, int buffer_count, const std::string& dir, int rank, const AioOptions& aio)
      : OffloadedState(size, sub_group),
        record_(record_bytes(sub_group)),
        file_(dir, fmt::format("zerotrain-optimizer-rank{}.swap", rank), record_ * sub_groups(),
              {aio.block_size, aio.queue_depth, aio.threads}, kNvmeKey, /*direct=*/true),
        slots_(slot_count(sub_groups(), buffer_count)) {
    for (Slot& s : slots_)
      s.memory = Buffer<uint8_t>(cpu_device(), MemSpace::Host, MemCategory::Optimizer, record_, Init::Uninitialised);
    MemoryLedger::instance().add(MemSpace::File, MemCategory::Optimizer, file_.size());
  }
  ~FileState() override {
    try {
      flush();
    } catch (...) {  // the file goes away with this object; nothing is left to keep
    }
    MemoryLedger::instance().sub(MemSpace::File, MemCategory::Optimizer, file_.size());
  }

  bool prefetch(size_t k) override {
    if (k >= sub_groups() || find(k)) return true;
    Slot* s = free_slot();
    if (s) load(*s, k);
    return s != nullptr;
  }

  AdamState acquire(size_t k) override {
    Slot* s = find(k);
    if (!s) {
      s = free_slot();
      if (!s) fail("offloaded optimizer state: no free buffer for sub-group {} (buffer_count too small)", k);
      load(*s, k);
    }
    s->reading.wait();
    s->reading = {};
    s->in_use = true;
    auto* base = reinterpret_cast<float*>(s->memory.data());
    const size_t n = sub_group(k).size();
    return {base, base + n, base + 2 * n};
  }

  void release(size_t k, bool changed) override {
    Slot* s = find(k);
    if (!s) return;
    s->in_use = false;
    if (changed) {
      s->writing = file_.write(record_ * k, s->memory.data(), record_);
      s->writes = k;
    }
    s->holds = kNone;  // the next use reads it back
  }

  void flush() override {
    for (Slot& s : slots_) finish_write(s);
  }
  double io_seconds() const override { return file_.busy_seconds(); }

private:
  static constexpr size_t kNone = SIZE_MAX;
  struct Slot {
    Buffer<uint8_t> memory;
    size_t holds = kNone;   // the sub-group whose record it holds (or is reading)
    size_t writes = kNone;  // the sub-group whose record it is writing back
    bool in_use = false;
    AsyncFile::Ticket reading, writing;
  };
  Slot* find(size_t k) {
    for (Slot& s : slots_)
      if (s.holds == k) return &s;
    return nullptr;
  }
  // A slot nobody uses or reads into; its pending write must land before it is filled again.
  Slot* free_slot() {
    for (Slot& s : slots_)
      if (s.holds == kNone && !s.in_use) {
        finish_write(s);
        return &s;
      }
    return nullptr;
  }
  void finish_write(Slot& s) {
    AsyncFile::Ticket t = s.writing;
    s.writing = {};
    s.writes = kNone;
    t.wait();
  }
  void load(Slot& s, size_t k) {
    for (Slot& other : slots_)
      if (other.writes == k) finish_write(other);  // a record is read after its last write lands
    s.holds = k;
    s.reading = file_.read(record_ * k, s.memory.data(), record_);
  }

  uint64_t record_;
  AsyncFile file_;
  std::vector<Slot> slots_;
};

}  // namespace

FileStateBytes file_state_bytes(size_t size, size_t sub_group, int buffer_count) {
  const size_t groups = sub_group_count(size, sub_group), record = record_bytes(sub_group);
  return {direct_aligned(record * groups), slot_count(groups, buffer_count) * record};
}

std::unique_ptr<OffloadedState> make_memory_state(size_t size, size_t sub_group, Device& device, MemSpace space) {
  return std::make_unique<MemoryState>(size, sub_group, device, space);
}

std::unique_ptr<OffloadedState> make_file_state(size_t size, size_t sub_group, int buffer_count, const std::string& dir,
                                                int rank, const AioOptions& aio) {
  return std::make_unique<FileState>(size, sub_group, buffer_count, dir, rank, aio);
}

}  // namespace zt
