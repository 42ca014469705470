#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "core/device.hpp"

namespace zt {

std::string_view mem_space_name(MemSpace s) {
  switch (s) {
    case MemSpace::Device: return "device";
    case MemSpace::Host: return "host";
    case MemSpace::Pinned: return "pinned";
    case MemSpace::File: return "file";
    case MemSpace::Count: break;
  }
  return "?";
}

namespace {

// Large buffers come straight from the kernel: fresh anonymous pages read as zero without being
// touched, so a zero-initialised buffer costs nothing until it is used, and transparent huge pages
// (where the kernel allows them on request) cut the page faults of the first touch 512-fold.
constexpr size_t kMapThreshold = size_t(1) << 20;
constexpr size_t kHugePage = size_t(2) << 20;

size_t total_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  while (in >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024;
    in.ignore(256, '\n');
  }
  return 0;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

class CpuDevice final : public Device {
public:
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string name() const override { return "cpu (" + cpu_model_name() + ")"; }
  size_t memory_bytes() const override { return total_memory_bytes(); }

  void* allocate(MemSpace, size_t bytes, bool zeroed) override {
    if (bytes >= kMapThreshold) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return nullptr;
      if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
      return p;
    }
    // Page-aligned from a page up: such buffers may take part in direct I/O (offload files).
    const size_t align = bytes >= 4096 ? 4096 : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (p && zeroed) std::memset(p, 0, bytes);
    return p;
  }
  void free(MemSpace, void* p, size_t bytes) override {
    if (!p) return;
    if (bytes >= kMapThreshold) munmap(p, bytes);
    else std::free(p);
  }
  void copy(void* dst, const void* src, size_t bytes, Stream) override {
    if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  }
  void fill_zero(void* dst, size_t bytes, Stream) override {
    if (bytes > 0) std::memset(dst, 0, bytes);
  }

  Stream compute() override { return {}; }
  Stream comm() override { return {}; }
  Stream copies() override { return {}; }
  Event create_event() override { return {}; }
  void destroy_event(Event) override {}
  void record(Event, Stream) override {}
  void wait(Stream, Event) override {}
  void synchronize(Event) override {}
  void synchronize(Stream) override {}
};

}  // namespace

Device& cpu_device() {
  static CpuDevice device;
  return device;
}

}  // namespace zt
