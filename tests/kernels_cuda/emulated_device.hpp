#pragma once
// The GPU that the emulated CUDA runtime (cuda_runtime_stubs.cpp), cuBLASLt (cublaslt_stub.cpp),
// CUB (token_sort_stub.cpp) and NCCL (nccl_stub.cpp) stand in for, made adversarial so that the
// CPU suite catches what only a GPU would show:
// - Work queues per stream: kernel launches, async copies and memsets, cuBLASLt calls, sorts and
//   collectives return at once and run later. Events and stream waits add edges; the legacy
//   default stream waits for (and is waited for by) the blocking streams of its device.
// - Only synchronising calls run work (stream, event and device synchronisation, the blocking
//   copies and memsets, frees), in a seeded random order that respects the edges: "eager" picks
//   among every runnable op, so work unrelated to the wait runs early; "lazy" runs only what the
//   wait needs, so what nothing waits for runs as late as possible. Queries run what they can
//   without blocking (a GPU makes progress on its own).
// - Fresh and released device and pinned memory is all ones (a NaN in every float type, -1 as an
//   int); freed blocks stay poisoned in a quarantine for a while; the host destination of an
//   asynchronous device-to-host copy is poisoned until the copy has run.
// - Launch limits: block and grid dimensions, and dynamic shared memory above 48 KiB only after
//   cudaFuncSetAttribute raised the kernel's limit. A fault in device work (cuBLASLt with a
//   misaligned bias) is sticky: every later call returns it, as on a GPU.
// - Devices: ZT_EMU_DEVICES of them (default 1); a thread may be shown a subset, as
//   CUDA_VISIBLE_DEVICES shows one rank its own GPU (show_devices).
// - Stream capture (CUDA graphs): a captured stream, and every stream that waits for one of its
//   events, records nodes instead of queuing work; cudaGraphLaunch queues the graph as one op that
//   runs its nodes in a seeded random order respecting their edges. As CUDA does, a capture refuses
//   (and is invalidated by) synchronising calls, allocation and frees, queries of what it captured,
//   pageable copies and waits on events recorded outside it; it must end on its origin stream with
//   every stream it took in joined back.
// Environment: ZT_EMU_ORDER=eager|lazy (default eager), ZT_EMU_SEED (default 1).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace zt::emu {

// Queues `run` on `stream` (the current device's legacy stream for nullptr). `what` names the op
// in a deadlock report.
void enqueue(cudaStream_t stream, const char* what, std::function<void()> run);

// The error a launch of `function` with this configuration gets on the current device
// (cudaSuccess when it may run); a sticky fault included.
cudaError_t launch_error(dim3 grid, dim3 block, size_t shared_bytes, const void* function);

// Records a launch's error for cudaGetLastError (per host thread, as the runtime does).
void set_last_error(cudaError_t error);

// Called by device work that faults: the error becomes sticky.
void fault(cudaError_t error, const char* what);

// A collective over `participants` ranks: every rank calls join with the same key and its own
// stream; the op, which runs `run` once, depends on the work queued on every participant's stream
// and becomes runnable when the last one has joined. cancel releases an op that will never be
// complete (an aborted communicator): it then runs nothing.
void join(const void* key, int participants, cudaStream_t stream, const char* what, std::function<void()> run);
void cancel(const void* key);

// The physical devices the calling thread sees as devices 0, 1, ... (empty: all of them).
void show_devices(std::vector<int> physical);
int physical_device(int logical);  // -1 when the thread does not see it

enum class MemoryKind { Pageable, Pinned, Device };
MemoryKind memory_kind(const void* p);

// What the program asked of the runtime while a trace is on, in order: device work queued
// (kernels, copies, memsets, cuBLASLt calls, sorts, collectives, graph launches), calls that make
// the host wait for the device (stream, event and device synchronisations, blocking copies and
// memsets, copies to pageable memory, frees), and allocations (which a graph cannot hold and which
// may synchronise). From every host thread, each call with its thread.
enum class CallKind { Work, Synchronising, Allocation };
struct TracedCall {
  CallKind kind;
  std::string what;
  std::thread::id thread;
};
void start_trace();
std::vector<TracedCall> stop_trace();
// The calls of `thread` in a trace that waited for the device or allocated: before its last device
// work (inside the traced region's work), and after it.
struct Stalls {
  std::vector<std::string> before_last_work, after_last_work;
  std::string named() const;  // "inside: a; b; after: c; "
};
Stalls stalls_of(const std::vector<TracedCall>& trace, std::thread::id thread = std::this_thread::get_id());

// cuBLASLt objects made so far by the emulated library: matmul descriptors, matrix layouts,
// preferences and heuristic queries (what a caller that caches them makes once per shape).
uint64_t cublaslt_creations();

// How the emulated cuBLASLt answers a product with a fused epilogue (bias, GELU, DGELU), as
// cuBLASLt versions and GPUs may: it runs it (the default), its heuristic finds no algorithm, or the
// heuristic finds one and cublasLtMatmul refuses it with CUBLAS_STATUS_NOT_SUPPORTED.
enum class EpilogueAnswer { Run, NoAlgorithm, NotSupported };
void cublaslt_answer_epilogues(EpilogueAnswer answer);
// cublasLtMatmul calls queued so far with a fused epilogue.
uint64_t cublaslt_epilogue_calls();

// The emulated NCCL fails rank `rank`'s collectives from its `collective`-th (1 for the first) on,
// as after a network failure: that rank's part is never queued, so the op hangs on the others, and
// ncclCommGetAsyncError reports `nccl_result` (an ncclResult_t) on that rank's communicator.
void nccl_fail_collectives(int rank, uint64_t collective, int nccl_result);

// Synchronising calls made so far (stream, event and device synchronisations, blocking copies and
// memsets, copies to pageable memory): what a test counts to prove a region free of them.
uint64_t synchronisations();

// Runs every queued op (the whole emulated machine), for tests that compare before and after.
void drain_all();

}  // namespace zt::emu
