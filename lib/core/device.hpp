#pragma once
// Where bytes live and where work runs (docs/architecture.md, "Device seams"). A Device allocates in a memory
// space, copies between spaces, and orders work with streams and events. The model and the engine
// are written once against it; the CPU device makes streams and events trivial (every operation
// has completed when its call returns), a CUDA device maps them onto CUDA's.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/name_table.hpp"

namespace zt {

// Device: the memory the device computes in (the CPU's own RAM on the CPU device, HBM on a GPU).
// Host: ordinary host memory. Pinned: page-locked host memory (fast, asynchronous copies to and
// from a GPU). File: state held in files (NVMe offload); never allocated through a Device, only
// counted in the ledger.
enum class MemSpace : int { Device, Host, Pinned, File, Count };
constexpr int kMemSpaces = int(MemSpace::Count);
std::string_view mem_space_name(MemSpace s);  // "device", "host", "pinned", "file"

enum class DeviceKind { Cpu, Cuda };
// training.device, --device: the kind to compute on, or auto (a GPU when each rank has one).
enum class DeviceChoice { Auto, Cpu, Cuda };
inline constexpr auto kDeviceChoiceNames =
    name_table<DeviceChoice>({{DeviceChoice::Auto, "auto"}, {DeviceChoice::Cpu, "cpu"}, {DeviceChoice::Cuda, "cuda"}});

// Opaque handles; null on the CPU device.
struct Stream {
  void* handle = nullptr;
};
struct Event {
  void* handle = nullptr;
};
struct Graph {
  void* handle = nullptr;
};

class Device {
public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;       // "NVIDIA H100 80GB HBM3", "cpu: 2 threads of ..."
  virtual size_t memory_bytes() const = 0;    // capacity of MemSpace::Device

  // Memory. allocate returns nullptr when the space has no room (Buffer turns that into a
  // zt::Error naming the category); bytes > 0, 64-byte aligned at least, and 4096-byte aligned
  // from 4096 bytes up (host buffers may serve direct I/O). zeroed: the memory must
  // read as zeros (the CPU device gets that for free from fresh pages: nothing is touched).
  virtual void* allocate(MemSpace space, size_t bytes, bool zeroed) = 0;
  virtual void free(MemSpace space, void* p, size_t bytes) = 0;
  // Copies between any two spaces, ordered on `stream`.
  virtual void copy(void* dst, const void* src, size_t bytes, Stream stream) = 0;
  virtual void fill_zero(void* dst, size_t bytes, Stream stream) = 0;

  // Streams: model kernels run on compute(), collectives on comm(), offload traffic on copies().
  virtual Stream compute() = 0;
  virtual Stream comm() = 0;
  virtual Stream copies() = 0;
  virtual Event create_event() = 0;
  virtual void destroy_event(Event e) = 0;
  virtual void record(Event e, Stream s) = 0;
  virtual void wait(Stream s, Event e) = 0;  // s waits for e without blocking the host
  virtual void synchronize(Event e) = 0;     // the host waits for e
  virtual void synchronize(Stream s) = 0;    // the host waits for everything queued on s

  // Graphs (CUDA graphs), where the device has them: capture(work) records what `work` queues on
  // compute() (and on streams that wait for its events) without running it, and launch(g) queues
  // all of it on compute() again, as often as asked, on what the buffers it named hold then. Work
  // that waits for the device, allocates or frees, or copies pageable memory cannot be captured
  // (capture throws). A device without graphs (the CPU) runs nothing and returns a null Graph.
  virtual bool has_graphs() const { return false; }
  virtual Graph capture(const std::function<void()>& work) {
    (void)work;
    return {};
  }
  virtual void launch(Graph g) { (void)g; }
  virtual void destroy_graph(Graph g) { (void)g; }
};

// The process's CPU device: every space is host memory (Pinned too, Device too), operations run
// on the calling thread.
Device& cpu_device();

}  // namespace zt
