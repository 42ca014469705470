// The CUDA runtime calls the kernels, the CUDA backend (CudaDevice, the operator tables), the
// NCCL communicator and the tests make, for the emulated build, over the adversarial machine that
// emulated_device.hpp describes: memory is host memory (allocations remembered, so that
// cudaPointerGetAttributes tells device, pinned and pageable memory apart as the real runtime
// does), work waits in per-stream queues for a synchronising call, and H100 limits apply.
// All state sits behind one mutex; queued work runs under it, one op at a time, from whichever
// host thread drains.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "emulated_device.hpp"

namespace zt::emu {
namespace {

constexpr unsigned char kPoison = 0xff;  // NaN in fp32, bf16, fp16 and fp64; -1 as an integer
constexpr size_t kQuarantineBytes = size_t(256) << 20;
constexpr int kDefaultSharedBytes = 48 * 1024;
constexpr int kOptInSharedBytes = 227 * 1024;
constexpr size_t kDeviceBytes = size_t(80) << 30;  // an H100's memory

struct Allocation {
  size_t bytes;
  MemoryKind kind;
  int device;
};

struct Op {
  std::function<void()> run;
  std::vector<uint64_t> deps;
  std::vector<int> devices;
  int missing = 0;  // participants of a collective that have not joined yet
  bool cancelled = false;
  const char* what = "";
};

// Work recorded by a stream capture: a node of the graph, after the nodes of `deps` (indices).
struct Node {
  std::function<void()> run;  // null for an event record
  const char* what = "";
  std::vector<long> deps;
};
using Nodes = std::vector<Node>;

// A stream capture under way: the streams it has taken in (the origin, and those that waited for
// one of its events) record nodes instead of queuing work.
struct Capture {
  cudaStream_t origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  bool invalidated = false;
  Nodes nodes;
  std::vector<cudaStream_t> streams;
};

// Ends the capture's usefulness, as CUDA does after a refused call; names the call on stderr (CUDA
// says only that the capture was invalidated, at its end).
void invalidate(Capture& c, const char* why) {
  if (!c.invalidated) std::fprintf(stderr, "emulated CUDA: a stream capture is invalidated by %s\n", why);
  c.invalidated = true;
}

struct StreamState {
  int device = 0;
  bool blocking = true;  // orders with the legacy default stream
  bool legacy = false;
  uint64_t tail = 0;             // the last op queued
  std::vector<uint64_t> waits;   // event waits the next op inherits
  std::shared_ptr<Capture> capture;  // while captured
  long capture_tail = -1;            // its last node in the capture
  std::vector<long> capture_waits;   // captured event waits the next node inherits
};

struct EventState {
  uint64_t op = 0;  // the marker its last record queued (0: never recorded)
  bool timing = true;
  std::shared_ptr<Capture> capture;  // recorded in a capture: at node `node` of it
  long node = -1;
};

enum class Order { Eager, Lazy };

struct Machine {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<uint64_t, Op> pending;
  uint64_t next_op = 1;
  std::map<const void*, StreamState> streams;
  std::map<int, StreamState> legacy;  // per physical device
  std::map<const void*, EventState> events;
  std::map<const char*, Allocation> allocations;  // by first byte
  std::map<int, size_t> device_bytes;              // allocated per device
  std::deque<std::pair<char*, size_t>> quarantine;
  size_t quarantined = 0;
  std::map<std::pair<int, const void*>, int> shared_limits;  // (device, kernel) -> bytes
  std::map<const void*, uint64_t> joining;
  std::atomic<cudaError_t> sticky{cudaSuccess};
  std::map<uint64_t, std::vector<std::pair<const char*, size_t>>> host_ranges;  // of queued copies
  std::set<std::shared_ptr<Capture>> captures;  // under way
  std::map<const void*, std::shared_ptr<const Nodes>> graphs, executables;
  bool tracing = false;
  std::vector<TracedCall> trace;
  int devices = 1;
  Order order = Order::Eager;
  std::mt19937_64 rng;
  uint64_t synchronisations = 0;
  uintptr_t next_handle = 0x100;

  Machine() {
    if (const char* d = std::getenv("ZT_EMU_DEVICES")) devices = std::max(0, std::atoi(d));
    if (const char* o = std::getenv("ZT_EMU_ORDER")) {
      if (std::strcmp(o, "lazy") == 0) order = Order::Lazy;
      else if (std::strcmp(o, "eager") != 0) {
        std::fprintf(stderr, "emulated CUDA: ZT_EMU_ORDER=%s: expected eager or lazy\n", o);
        std::abort();
      }
    }
    const char* seed = std::getenv("ZT_EMU_SEED");
    rng.seed(seed ? std::strtoull(seed, nullptr, 10) : 1);
  }
};

// Never destroyed: CudaDevice and the communicators synchronise from static destructors.
Machine& machine() {
  static Machine* m = new Machine();
  return *m;
}
using Lock = std::unique_lock<std::mutex>;

thread_local std::vector<int> visible;  // logical device -> physical; empty: every device as itself
thread_local int current = 0;           // logical
thread_local cudaError_t last_error = cudaSuccess;

int device_count(const Machine& m) { return visible.empty() ? m.devices : int(visible.size()); }
int physical(const Machine& m, int logical) {
  if (logical < 0 || logical >= device_count(m)) return -1;
  return visible.empty() ? logical : visible[size_t(logical)];
}

[[noreturn]] void fatal(const std::string& message) {
  std::fprintf(stderr, "emulated CUDA: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

bool done(const Machine& m, uint64_t id) { return id == 0 || m.pending.count(id) == 0; }

StreamState& stream_state(Machine& m, cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) {
    const int d = physical(m, current);
    StreamState& st = m.legacy[d];
    st.device = d;
    st.legacy = true;
    return st;
  }
  auto it = m.streams.find(s);
  if (it == m.streams.end()) fatal("work queued on a stream that does not exist (destroyed, or never created)");
  return it->second;
}

// Makes `op` wait for what `st` has queued (its tail, its pending event waits, and the legacy
// stream's implicit ordering), and puts it at the end of `st`.
void attach(Machine& m, StreamState& st, uint64_t id, Op& op) {
  auto depend = [&](uint64_t d) {
    if (d != 0 && d != id && !done(m, d)) op.deps.push_back(d);
  };
  depend(st.tail);
  for (uint64_t w : st.waits) depend(w);
  if (st.legacy) {
    for (auto& [handle, other] : m.streams)
      if (other.device == st.device && other.blocking) depend(other.tail);
  } else if (st.blocking) {
    depend(m.legacy[st.device].tail);
  }
  op.devices.push_back(st.device);
  st.tail = id;
  st.waits.clear();
}

void traced(Machine& m, CallKind kind, const char* what) {
  if (m.tracing) m.trace.push_back({kind, what, std::this_thread::get_id()});
}

// Records a node at the end of a captured stream.
void capture_node(StreamState& st, const char* what, std::function<void()> run) {
  Capture& c = *st.capture;
  Node node{std::move(run), what, st.capture_waits};
  if (st.capture_tail >= 0) node.deps.push_back(st.capture_tail);
  c.nodes.push_back(std::move(node));
  st.capture_tail = long(c.nodes.size()) - 1;
  st.capture_waits.clear();
}

// Queues `run` on `st`, or records it when `st` is captured (then returns 0: no op was queued).
uint64_t add_op(Machine& m, StreamState& st, const char* what, std::function<void()> run) {
  if (st.capture) {
    capture_node(st, what, std::move(run));
    return 0;
  }
  if (run) traced(m, CallKind::Work, what);
  const uint64_t id = m.next_op++;
  Op& op = m.pending[id];
  op.run = std::move(run);
  op.what = what;
  attach(m, st, id, op);
  return id;
}

// Whether CUDA refuses an unsafe call (one that may wait for the device, or allocate or free)
// from this thread now: a capture in global mode is under way on any thread, or one in thread-local
// mode on this one. Such a call invalidates those captures.
bool capture_refuses(Machine& m, const char* what) {
  bool refused = false;
  for (const auto& c : m.captures)
    if (c->mode == cudaStreamCaptureModeGlobal ||
        (c->mode == cudaStreamCaptureModeThreadLocal && c->thread == std::this_thread::get_id())) {
      invalidate(*c, what);
      refused = true;
    }
  return refused;
}

bool runnable(const Machine& m, const Op& op) {
  if (op.missing > 0) return false;
  for (uint64_t d : op.deps)
    if (!done(m, d)) return false;
  return true;
}

void run_op(Machine& m, uint64_t id) {
  auto it = m.pending.find(id);
  Op op = std::move(it->second);
  m.pending.erase(it);  // erased first: an op never waits for itself
  m.host_ranges.erase(id);
  // After a fault the context is lost: later work does nothing (its error is the sticky one).
  if (!op.cancelled && m.sticky == cudaSuccess && op.run) op.run();
  m.changed.notify_all();
}

// Every pending op the targets need (themselves included).
std::set<uint64_t> ancestors(const Machine& m, const std::vector<uint64_t>& targets) {
  std::set<uint64_t> seen;
  std::vector<uint64_t> todo(targets.begin(), targets.end());
  while (!todo.empty()) {
    const uint64_t id = todo.back();
    todo.pop_back();
    if (done(m, id) || !seen.insert(id).second) continue;
    for (uint64_t d : m.pending.at(id).deps) todo.push_back(d);
  }
  return seen;
}

// Runs queued work until every target is done; false when block is false and that needs ops that
// cannot run yet (a collective whose ranks have not all joined).
bool drain(Machine& m, Lock& lock, std::vector<uint64_t> targets, bool block) {
  for (;;) {
    std::erase_if(targets, [&](uint64_t t) { return done(m, t); });
    if (targets.empty()) return true;
    const std::set<uint64_t> needed = ancestors(m, targets);
    std::vector<uint64_t> ready;
    if (m.order == Order::Lazy) {
      for (uint64_t id : needed)
        if (runnable(m, m.pending.at(id))) ready.push_back(id);
    } else {
      for (const auto& [id, op] : m.pending)
        if (runnable(m, op)) ready.push_back(id);
    }
    if (ready.empty()) {
      bool joining = false;
      for (uint64_t id : needed) joining = joining || m.pending.at(id).missing > 0;
      if (!joining) fatal("queued work can never run (an op waits for itself)");
      if (!block) return false;
      m.changed.wait_for(lock, std::chrono::milliseconds(50));  // another rank's thread may join
      continue;
    }
    run_op(m, ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(m.rng)]);
  }
}

std::vector<uint64_t> stream_targets(Machine& m, cudaStream_t s) {
  StreamState& st = stream_state(m, s);
  std::vector<uint64_t> t = st.waits;
  t.push_back(st.tail);
  return t;
}

std::vector<uint64_t> device_targets(const Machine& m, int device) {
  std::vector<uint64_t> t;
  for (const auto& [id, op] : m.pending)
    if (std::find(op.devices.begin(), op.devices.end(), device) != op.devices.end()) t.push_back(id);
  return t;
}

MemoryKind kind_of(const Machine& m, const void* p) {
  const char* c = static_cast<const char*>(p);
  auto it = m.allocations.upper_bound(c);
  if (it == m.allocations.begin()) return MemoryKind::Pageable;
  --it;
  return c < it->first + it->second.bytes ? it->second.kind : MemoryKind::Pageable;
}

cudaError_t allocate(void** out, size_t n, MemoryKind kind) {
  *out = nullptr;
  Machine& m = machine();
  Lock lock(m.mutex);
  if (m.sticky != cudaSuccess) return m.sticky;
  const char* what = kind == MemoryKind::Device ? "cudaMalloc" : "cudaHostAlloc";
  if (capture_refuses(m, what)) return cudaErrorStreamCaptureUnsupported;
  traced(m, CallKind::Allocation, what);
  // 256-byte aligned, like cudaMalloc (the kernels' vector paths and the workspaces rely on it).
  const size_t bytes = (std::max<size_t>(n, 1) + 255) / 256 * 256;
  const int device = physical(m, current);
  if (kind == MemoryKind::Device && bytes > kDeviceBytes - m.device_bytes[device]) return cudaErrorMemoryAllocation;
  void* p = std::aligned_alloc(256, bytes);
  if (!p) return cudaErrorMemoryAllocation;
  std::memset(p, kPoison, bytes);
  m.allocations[static_cast<const char*>(p)] = {n, kind, device};
  if (kind == MemoryKind::Device) m.device_bytes[device] += bytes;
  *out = p;
  return cudaSuccess;
}

// Frees after the current device's work (cudaFree synchronises it), poisoned, through the quarantine.
cudaError_t release(void* p, const char* what) {
  if (!p) return machine().sticky;
  Machine& m = machine();
  Lock lock(m.mutex);
  if (capture_refuses(m, what)) return cudaErrorStreamCaptureUnsupported;
  ++m.synchronisations;
  traced(m, CallKind::Synchronising, what);
  drain(m, lock, device_targets(m, physical(m, current)), true);
  auto it = m.allocations.find(static_cast<const char*>(p));
  if (it == m.allocations.end()) fatal("free of a pointer the runtime did not allocate");
  std::memset(p, kPoison, it->second.bytes);
  if (it->second.kind == MemoryKind::Device)
    m.device_bytes[it->second.device] -= (std::max<size_t>(it->second.bytes, 1) + 255) / 256 * 256;
  m.quarantine.emplace_back(static_cast<char*>(p), it->second.bytes);
  m.quarantined += it->second.bytes;
  m.allocations.erase(it);
  while (m.quarantined > kQuarantineBytes) {
    std::free(m.quarantine.front().first);
    m.quarantined -= m.quarantine.front().second;
    m.quarantine.pop_front();
  }
  return m.sticky;
}

template <typename Handle>
Handle new_handle(Machine& m) {
  m.next_handle += 16;
  return reinterpret_cast<Handle>(m.next_handle);
}

}  // namespace

void enqueue(cudaStream_t stream, const char* what, std::function<void()> run) {
  Machine& m = machine();
  Lock lock(m.mutex);
  add_op(m, stream_state(m, stream), what, std::move(run));
}

cudaError_t launch_error(dim3 grid, dim3 block, size_t shared_bytes, const void* function) {
  Machine& m = machine();
  Lock lock(m.mutex);
  if (m.sticky != cudaSuccess) return m.sticky;
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > unsigned(INT_MAX) || grid.y > 65535 ||
      grid.z > 65535)
    return cudaErrorInvalidConfiguration;
  auto limit = m.shared_limits.find({physical(m, current), function});
  const size_t allowed = limit == m.shared_limits.end() ? size_t(kDefaultSharedBytes) : size_t(limit->second);
  if (shared_bytes > allowed) return cudaErrorInvalidValue;
  return cudaSuccess;
}

void set_last_error(cudaError_t error) { last_error = error; }

void fault(cudaError_t error, const char* what) {
  // Called by queued work, which runs with the machine's mutex held.
  Machine& m = machine();
  if (m.sticky == cudaSuccess) {
    m.sticky = error;
    std::fprintf(stderr, "emulated CUDA: device fault: %s\n", what);
  }
}

void join(const void* key, int participants, cudaStream_t stream, const char* what, std::function<void()> run) {
  Machine& m = machine();
  Lock lock(m.mutex);
  auto it = m.joining.find(key);
  uint64_t id;
  if (it == m.joining.end()) {
    id = m.next_op++;
    Op& op = m.pending[id];
    op.missing = participants;
    op.what = what;
    op.run = std::move(run);
    m.joining[key] = id;
  } else {
    id = it->second;
  }
  Op& op = m.pending.at(id);
  StreamState& st = stream_state(m, stream);
  if (st.capture) fatal(std::string(what) + " captured into a graph: collectives in graphs are not emulated");
  traced(m, CallKind::Work, what);
  attach(m, st, id, op);
  if (--op.missing == 0) {
    m.joining.erase(key);
    m.changed.notify_all();
  }
}

void cancel(const void* key) {
  Machine& m = machine();
  Lock lock(m.mutex);
  auto it = m.joining.find(key);
  if (it == m.joining.end()) return;
  Op& op = m.pending.at(it->second);
  op.missing = 0;
  op.cancelled = true;
  m.joining.erase(it);
  m.changed.notify_all();
}

void show_devices(std::vector<int> physical_ordinals) {
  visible = std::move(physical_ordinals);
  current = 0;
}

int physical_device(int logical) {
  Machine& m = machine();
  Lock lock(m.mutex);
  return physical(m, logical);
}

MemoryKind memory_kind(const void* p) {
  Machine& m = machine();
  Lock lock(m.mutex);
  return kind_of(m, p);
}

void start_trace() {
  Machine& m = machine();
  Lock lock(m.mutex);
  m.trace.clear();
  m.tracing = true;
}

std::vector<TracedCall> stop_trace() {
  Machine& m = machine();
  Lock lock(m.mutex);
  m.tracing = false;
  return std::exchange(m.trace, {});
}

Stalls stalls_of(const std::vector<TracedCall>& trace, std::thread::id thread) {
  size_t last = 0;
  for (size_t i = 0; i < trace.size(); ++i)
    if (trace[i].thread == thread && trace[i].kind == CallKind::Work) last = i;
  Stalls s;
  for (size_t i = 0; i < trace.size(); ++i)
    if (trace[i].thread == thread && trace[i].kind != CallKind::Work)
      (i < last ? s.before_last_work : s.after_last_work).push_back(trace[i].what);
  return s;
}

std::string Stalls::named() const {
  std::string out = "inside: ";
  for (const std::string& c : before_last_work) out += c + "; ";
  out += "after: ";
  for (const std::string& c : after_last_work) out += c + "; ";
  return out;
}

uint64_t synchronisations() {
  Machine& m = machine();
  Lock lock(m.mutex);
  return m.synchronisations;
}

void drain_all() {
  Machine& m = machine();
  Lock lock(m.mutex);
  std::vector<uint64_t> all;
  for (const auto& [id, op] : m.pending) all.push_back(id);
  drain(m, lock, all, true);
}

}  // namespace zt::emu

using namespace zt::emu;

namespace {

// The runtime's answer to a call after a fault: the sticky error.
#define ZT_EMU_STICKY(m)                             \
  do {                                               \
    if ((m).sticky != cudaSuccess) return (m).sticky; \
  } while (0)

// Blocks until the ops targets(m) names have run (a synchronising call).
template <typename Targets>
cudaError_t synchronise(const char* what, Targets&& targets) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  if (capture_refuses(m, what)) return cudaErrorStreamCaptureUnsupported;
  ++m.synchronisations;
  traced(m, CallKind::Synchronising, what);
  drain(m, lock, targets(m), true);
  return m.sticky;
}

bool overlaps(const char* a, size_t an, const char* b, size_t bn) { return a < b + bn && b < a + an; }

// A call CUDA refuses on a captured stream (a query, a synchronisation, a pageable copy): the
// capture is invalidated.
bool refuse_captured(StreamState& st, const char* what) {
  if (!st.capture) return false;
  invalidate(*st.capture, what);
  return true;
}

// A copy queued on `stream`; `blocking`: the call returns once it has run.
cudaError_t copy(void* dst, const void* src, size_t n, cudaStream_t stream, bool blocking) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  if (n == 0) return cudaSuccess;
  const MemoryKind to = kind_of(m, dst), from = kind_of(m, src);
  // A copy to pageable memory returns once done, as the runtime's does; so does one between two
  // host buffers.
  const bool waits = blocking || (to == MemoryKind::Pageable && from == MemoryKind::Device) ||
                     (to != MemoryKind::Device && from != MemoryKind::Device);
  StreamState& st = stream_state(m, stream);
  if (st.capture && (waits || to == MemoryKind::Pageable || from == MemoryKind::Pageable) &&
      refuse_captured(st, "a copy with pageable host memory"))
    return cudaErrorStreamCaptureUnsupported;
  if (st.capture) {  // a node reading and writing at each launch of the graph
    add_op(m, st, "memcpy", [dst, src, n] { std::memmove(dst, src, n); });
    return cudaSuccess;
  }
  if (waits && capture_refuses(m, blocking ? "cudaMemcpy" : "a copy with pageable host memory"))
    return cudaErrorStreamCaptureUnsupported;
  std::function<void()> run;
  if (from == MemoryKind::Pageable) {
    // Pageable sources are staged at the call: the caller may reuse them on return.
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + n);
    run = [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
  } else {
    run = [dst, src, n] { std::memmove(dst, src, n); };
  }
  // The host destination of a device-to-host copy holds garbage until the copy has run, unless an
  // earlier queued copy still reads or writes it (that copy must see what the host left there).
  const char* d = static_cast<const char*>(dst);
  if (to != MemoryKind::Device && from == MemoryKind::Device) {
    bool busy = false;
    for (const auto& [id, ranges] : m.host_ranges)
      for (const auto& [p, bytes] : ranges) busy = busy || overlaps(d, n, p, bytes);
    if (!busy) std::memset(dst, kPoison, n);
  }
  const uint64_t id = add_op(m, st, "memcpy", std::move(run));
  if (to != MemoryKind::Device) m.host_ranges[id].emplace_back(d, n);
  if (from != MemoryKind::Device) m.host_ranges[id].emplace_back(static_cast<const char*>(src), n);
  if (waits) {
    ++m.synchronisations;
    traced(m, CallKind::Synchronising, blocking ? "cudaMemcpy" : "cudaMemcpyAsync with pageable host memory");
    drain(m, lock, {id}, true);
  }
  return m.sticky;
}

cudaError_t fill(void* p, int value, size_t n, cudaStream_t stream, bool blocking) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  if (blocking && capture_refuses(m, "cudaMemset")) return cudaErrorStreamCaptureUnsupported;
  const uint64_t id = add_op(m, stream_state(m, stream), "memset", [p, value, n] { std::memset(p, value, n); });
  if (blocking) {
    ++m.synchronisations;
    traced(m, CallKind::Synchronising, "cudaMemset");
    drain(m, lock, {id}, true);
  }
  return m.sticky;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** p, size_t n) { return allocate(p, n, MemoryKind::Device); }
cudaError_t cudaFree(void* p) { return release(p, "cudaFree"); }
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) { return allocate(p, n, MemoryKind::Pinned); }
cudaError_t cudaFreeHost(void* p) { return release(p, "cudaFreeHost"); }
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  *attributes = cudaPointerAttributes{};
  switch (memory_kind(p)) {
    case MemoryKind::Device: attributes->type = cudaMemoryTypeDevice; break;
    case MemoryKind::Pinned: attributes->type = cudaMemoryTypeHost; break;
    case MemoryKind::Pageable: attributes->type = cudaMemoryTypeUnregistered; break;
  }
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  return copy(dst, src, n, nullptr, true);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t s) {
  return copy(dst, src, n, s, false);
}
cudaError_t cudaMemset(void* p, int value, size_t n) { return fill(p, value, n, nullptr, true); }
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s) { return fill(p, value, n, s, false); }
cudaError_t cudaDeviceSynchronize() {
  return synchronise("cudaDeviceSynchronize", [](Machine& m) { return device_targets(m, physical(m, current)); });
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  *s = new_handle<cudaStream_t>(m);
  StreamState& st = m.streams[*s];
  st.device = physical(m, current);
  st.blocking = (flags & cudaStreamNonBlocking) == 0;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  Machine& m = machine();
  Lock lock(m.mutex);
  m.streams.erase(s);  // its queued work still runs
  return m.sticky;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  {
    Machine& m = machine();
    Lock lock(m.mutex);
    if (refuse_captured(stream_state(m, s), "cudaStreamSynchronize")) return cudaErrorStreamCaptureUnsupported;
  }
  return synchronise("cudaStreamSynchronize", [s](Machine& m) { return stream_targets(m, s); });
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  if (refuse_captured(stream_state(m, s), "cudaStreamQuery")) return cudaErrorStreamCaptureUnsupported;
  return drain(m, lock, stream_targets(m, s), false) ? m.sticky.load() : cudaErrorNotReady;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  const EventState& ev = m.events.at(e);
  StreamState& st = stream_state(m, s);
  if (ev.capture && m.captures.count(ev.capture)) {
    // An event of a capture under way: the stream joins that capture (a fork), or, already in it,
    // its next node waits for the event's.
    if (st.legacy || (st.capture && st.capture != ev.capture)) {
      invalidate(*ev.capture, "a wait joining two captures, or the legacy stream");
      if (st.capture) invalidate(*st.capture, "a wait joining two captures");
      return st.legacy ? cudaErrorStreamCaptureImplicit : cudaErrorStreamCaptureMerge;
    }
    if (!st.capture) {
      st.capture = ev.capture;
      st.capture_tail = -1;
      st.capture_waits.clear();
      ev.capture->streams.push_back(s);
    }
    if (ev.node >= 0) st.capture_waits.push_back(ev.node);
    return cudaSuccess;
  }
  // A captured stream may not wait for work outside its capture.
  if (st.capture && ev.op != 0 && !ev.capture) {
    invalidate(*st.capture, "a wait for an event recorded outside the capture");
    return cudaErrorStreamCaptureIsolation;
  }
  if (st.capture) return cudaSuccess;
  const uint64_t op = ev.op;
  if (!done(m, op)) st.waits.push_back(op);
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  *e = new_handle<cudaEvent_t>(m);
  m.events[*e].timing = (flags & cudaEventDisableTiming) == 0;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  Machine& m = machine();
  Lock lock(m.mutex);
  m.events.erase(e);
  return m.sticky;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  EventState& ev = m.events.at(e);
  StreamState& st = stream_state(m, s);
  if (st.capture) {
    capture_node(st, "event record", nullptr);
    ev.capture = st.capture;
    ev.node = st.capture_tail;
    ev.op = 0;  // after the capture, waiting for it waits for nothing
    return cudaSuccess;
  }
  ev.capture.reset();
  ev.node = -1;
  ev.op = add_op(m, st, "event record", nullptr);
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return synchronise("cudaEventSynchronize", [e](Machine& m) { return std::vector<uint64_t>{m.events.at(e).op}; });
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  const EventState& ev = m.events.at(e);
  if (ev.capture && m.captures.count(ev.capture)) {
    invalidate(*ev.capture, "cudaEventQuery of a captured event");
    return cudaErrorStreamCaptureUnsupported;
  }
  return drain(m, lock, {m.events.at(e).op}, false) ? m.sticky.load() : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  const EventState &a = m.events.at(start), &b = m.events.at(end);
  if (!a.timing || !b.timing) return cudaErrorInvalidResourceHandle;
  if (a.op == 0 || b.op == 0) return cudaErrorInvalidResourceHandle;
  if (!done(m, a.op) || !done(m, b.op)) return cudaErrorNotReady;
  *ms = 0.0f;  // no clock on the emulated device
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  const cudaError_t sticky = machine().sticky;
  return sticky != cudaSuccess ? sticky : e;
}
cudaError_t cudaPeekAtLastError() {
  const cudaError_t sticky = machine().sticky;
  return sticky != cudaSuccess ? sticky : last_error;
}
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureMerge: return "cudaErrorStreamCaptureMerge";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    default: return "cudaErrorEmulated";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalState: return "the resource is in an illegal state (no capture under way, or one already)";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureMerge: return "operation would result in a merge of separate capture sequences";
    case cudaErrorStreamCaptureUnmatched: return "capture was not ended in the same stream as it began";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    default: return "error in the emulated runtime";
  }
}
cudaError_t cudaSetDevice(int device) {
  Machine& m = machine();
  Lock lock(m.mutex);
  if (physical(m, device) < 0) return cudaErrorInvalidDevice;
  current = device;
  return m.sticky;
}
cudaError_t cudaGetDevice(int* device) {
  *device = current;
  return machine().sticky;
}
cudaError_t cudaGetDeviceCount(int* count) {
  Machine& m = machine();
  Lock lock(m.mutex);
  *count = device_count(m);
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  Machine& m = machine();
  Lock lock(m.mutex);
  const int p = physical(m, device);
  if (p < 0) return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "CUDA emulated on the CPU (device %d)", p);
  prop->totalGlobalMem = kDeviceBytes;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->maxThreadsPerBlock = 1024;
  prop->sharedMemPerBlock = kDefaultSharedBytes;
  prop->sharedMemPerBlockOptin = kOptInSharedBytes;
  prop->pciBusID = p;
  std::memset(prop->uuid.bytes, 0, sizeof prop->uuid.bytes);
  std::memcpy(prop->uuid.bytes, &p, sizeof p);
  prop->uuid.bytes[15] = 0x5a;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (physical_device(device) < 0) return cudaErrorInvalidDevice;
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = kOptInSharedBytes; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = kDefaultSharedBytes; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = 132; return cudaSuccess;
    default: return cudaErrorInvalidValue;
  }
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  StreamState& st = stream_state(m, s);
  if (st.legacy) return cudaErrorStreamCaptureUnsupported;
  if (st.capture) return cudaErrorIllegalState;
  auto c = std::make_shared<Capture>();
  c->origin = s;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->streams.push_back(s);
  st.capture = c;
  st.capture_tail = -1;
  st.capture_waits.clear();
  m.captures.insert(c);
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  Machine& m = machine();
  Lock lock(m.mutex);
  const StreamState& st = stream_state(m, s);
  *status = !st.capture                ? cudaStreamCaptureStatusNone
            : st.capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  return m.sticky;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  Machine& m = machine();
  Lock lock(m.mutex);
  *graph = nullptr;
  ZT_EMU_STICKY(m);
  StreamState& origin = stream_state(m, s);
  if (!origin.capture) return cudaErrorIllegalState;
  std::shared_ptr<Capture> c = origin.capture;
  if (c->origin != s) {
    invalidate(*c, "cudaStreamEndCapture on a stream other than the capture's origin");
    return cudaErrorStreamCaptureUnmatched;
  }
  // Every stream the capture took in must have joined the origin again: its last node is one the
  // origin's end depends on.
  std::set<long> joined;
  std::vector<long> todo = origin.capture_waits;
  if (origin.capture_tail >= 0) todo.push_back(origin.capture_tail);
  while (!todo.empty()) {
    const long n = todo.back();
    todo.pop_back();
    if (!joined.insert(n).second) continue;
    for (long d : c->nodes[size_t(n)].deps) todo.push_back(d);
  }
  bool unjoined = false;
  for (cudaStream_t t : c->streams) {
    StreamState& other = m.streams.at(t);
    unjoined = unjoined || (t != s && other.capture_tail >= 0 && !joined.count(other.capture_tail));
    other.capture.reset();
    other.capture_tail = -1;
    other.capture_waits.clear();
  }
  m.captures.erase(c);
  if (unjoined) return cudaErrorStreamCaptureUnjoined;
  if (c->invalidated) return cudaErrorStreamCaptureInvalidated;
  *graph = new_handle<cudaGraph_t>(m);
  m.graphs[*graph] = std::make_shared<const Nodes>(std::move(c->nodes));
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  auto it = m.graphs.find(graph);
  if (it == m.graphs.end()) return cudaErrorInvalidValue;
  *exec = new_handle<cudaGraphExec_t>(m);
  m.executables[*exec] = it->second;
  return cudaSuccess;
}
// The graph's nodes run as one op of the stream, each once the nodes it depends on have run, in a
// seeded random order among those ready.
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  auto it = m.executables.find(exec);
  if (it == m.executables.end()) return cudaErrorInvalidValue;
  StreamState& st = stream_state(m, s);
  if (refuse_captured(st, "cudaGraphLaunch")) return cudaErrorStreamCaptureUnsupported;  // not emulated
  std::shared_ptr<const Nodes> nodes = it->second;
  add_op(m, st, "cudaGraphLaunch", [nodes, &m] {
    std::vector<bool> ran(nodes->size(), false);
    for (size_t left = nodes->size(); left > 0; --left) {
      std::vector<size_t> ready;
      for (size_t i = 0; i < nodes->size(); ++i) {
        bool ok = !ran[i];
        for (long d : (*nodes)[i].deps) ok = ok && ran[size_t(d)];
        if (ok) ready.push_back(i);
      }
      const size_t pick = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(m.rng)];
      ran[pick] = true;
      if (m.sticky == cudaSuccess && (*nodes)[pick].run) (*nodes)[pick].run();
    }
  });
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Machine& m = machine();
  Lock lock(m.mutex);
  m.executables.erase(exec);  // a launch still queued keeps its nodes
  return m.sticky;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  Machine& m = machine();
  Lock lock(m.mutex);
  m.graphs.erase(graph);
  return m.sticky;
}
cudaError_t cudaFuncSetAttribute(const void* function, cudaFuncAttribute attr, int value) {
  Machine& m = machine();
  Lock lock(m.mutex);
  ZT_EMU_STICKY(m);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || value > kOptInSharedBytes) return cudaErrorInvalidValue;
  m.shared_limits[{physical(m, current), function}] = value;
  return cudaSuccess;
}

}  // extern "C"
