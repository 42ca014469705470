#pragma once
// Runs the CUDA kernels and their launchers on the CPU, for tests on machines without a GPU: g++
// compiles lib/kernels/cuda/*.cu with the CUDA keywords and built-ins below, and launch()
// (common.cuh) calls zt::emu::launch(), which checks the launch against the device's limits and
// queues the kernel on its stream (emulated_device.hpp); when the queue runs it, emulate() runs
// the grid one block at a time, each CUDA thread a fiber with its own stack. __syncthreads waits for every live
// thread of the block, __syncwarp and warp shuffles for every live thread of the warp; threads
// that have returned no longer count, as on the GPU. Threads waiting at different barriers are
// reported as a deadlock. __shared__ variables are statics (one block runs at a time) and the
// dynamic shared memory is a buffer per block.
//
// What this proves: the kernels' indexing, masking, tiling, reductions and arithmetic, on the
// exact source that nvcc compiles, their launch configurations, and the ordering of their
// streams. What it cannot: timing, occupancy, registers and static shared memory, memory-model
// races beyond what the barriers order, the real cuBLASLt and CUB.
// Fibers switch without system calls on x86-64 (zt_emu_switch, cuda_emulator.cpp), elsewhere
// with ucontext.
// Include it before any lib/kernels/cuda header.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "emulated_device.hpp"
#include "kernels/cuda/dtype_bits.cuh"

#define ZT_CUDA_EMULATION 1

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)

namespace zt::emu {

// Switching between fibers. On x86-64 a switch saves the callee-saved registers and the floating
// point control words on the current stack and moves to the other stack: no system call, where
// swapcontext makes two (it saves and restores the signal mask), which made the emulation of a
// training step system-call bound. Elsewhere, ucontext.
#if defined(__x86_64__)
// cuda_emulator.cpp: saves the registers on the current stack, stores its pointer in *save_sp,
// continues on load_sp with the registers saved there.
extern "C" void zt_emu_switch(void** save_sp, void* load_sp);
struct Context {
  void* sp = nullptr;
};
inline void switch_context(Context& save, Context& load) { zt_emu_switch(&save.sp, load.sp); }
// A context that starts entry() on the stack [stack, stack + bytes): the frame zt_emu_switch pops.
inline void make_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
  auto* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15));
  uint32_t control[2];
  asm volatile("stmxcsr %0; fnstcw %1" : "=m"(control[0]), "=m"(control[1]));
  top[-1] = 0;                                   // entry() never returns
  top[-2] = reinterpret_cast<uint64_t>(entry);   // where the first switch returns to
  for (int r = 3; r <= 8; ++r) top[-r] = 0;      // rbp, rbx, r12-r15
  std::memcpy(&top[-9], control, sizeof control);  // MXCSR, x87 control word
  c.sp = &top[-9];
}
#else
struct Context {
  ucontext_t context;
};
inline void switch_context(Context& save, Context& load) { swapcontext(&save.context, &load.context); }
inline void make_context(Context& c, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c.context);
  c.context.uc_stack.ss_sp = stack;
  c.context.uc_stack.ss_size = bytes;
  c.context.uc_link = nullptr;  // entry() never returns
  makecontext(&c.context, entry, 0);
}
#endif

// A CUDA thread as a fiber: its own stack and saved registers, and what it waits for.
enum class Wait { None, Block, Warp, Done };
struct Fiber {
  Context context;
  Wait wait = Wait::None;
};

struct Block {
  std::vector<Fiber> fibers;
  std::vector<int4> shared;        // dynamic shared memory, 16-byte aligned
  std::vector<uint64_t> exchange;  // one shuffle slot per thread
  std::vector<std::array<uint32_t, 6>> fragments;  // one mma operand slot per thread
  Context scheduler;
};

inline Block* block = nullptr;
inline uint3 thread_idx, block_idx;
inline int linear_tid = 0;
inline dim3 block_dim, grid_dim;
inline const std::function<void()>* job = nullptr;

constexpr size_t kStackBytes = 128 * 1024;

inline std::vector<std::unique_ptr<char[]>>& stacks() {
  static std::vector<std::unique_ptr<char[]>> s;
  return s;
}

// Back to the scheduler until the wait is over.
inline void wait_for(Wait w) {
  Fiber& f = block->fibers[size_t(linear_tid)];
  f.wait = w;
  switch_context(f.context, block->scheduler);
}

// A thread's whole life; at its end it hands the stack back to the scheduler for good.
inline void fiber_main() {
  (*job)();
  wait_for(Wait::Done);
  std::abort();  // a finished thread is never resumed
}

[[noreturn]] inline void deadlock(const char* why) {
  std::fprintf(stderr, "cuda_emulator: block (%u, %u, %u): %s\n", block_idx.x, block_idx.y, block_idx.z, why);
  std::abort();
}

// Runs one block to completion: every runnable thread runs until it waits or ends; then a warp
// whose live threads all wait at __syncwarp or a shuffle goes on, or else, when every live thread
// of the block waits at __syncthreads, all go on.
// Rounds alternate between ascending and descending thread order (and so do neighbouring blocks):
// a race between two threads of one phase then shows up as results that differ from the
// reference, or from a second run, instead of always resolving one way.
inline void run_block(int n, const dim3& threads, bool descending_first) {
  while (int(stacks().size()) < n) stacks().push_back(std::make_unique<char[]>(kStackBytes));
  Block& b = *block;
  for (int t = 0; t < n; t++) {
    make_context(b.fibers[size_t(t)].context, stacks()[size_t(t)].get(), kStackBytes, fiber_main);
  }
  const int warps = (n + 31) / 32;
  bool descending = descending_first;
  for (;;) {
    for (int i = 0; i < n; i++) {
      const int t = descending ? n - 1 - i : i;
      if (b.fibers[size_t(t)].wait != Wait::None) continue;
      linear_tid = t;
      thread_idx = uint3{unsigned(t) % threads.x, unsigned(t) / threads.x % threads.y,
                         unsigned(t) / (threads.x * threads.y)};
      switch_context(b.scheduler, b.fibers[size_t(t)].context);
    }
    descending = !descending;
    bool released = false, all_done = true, all_at_block = true;
    for (int w = 0; w < warps; w++) {
      bool any = false, all = true;
      for (int t = 32 * w; t < std::min(n, 32 * w + 32); t++) {
        const Wait s = b.fibers[size_t(t)].wait;
        if (s == Wait::Done) continue;
        all_done = false;
        if (s != Wait::Block) all_at_block = false;
        any = any || s == Wait::Warp;
        all = all && s == Wait::Warp;
      }
      if (any && all) {
        for (int t = 32 * w; t < std::min(n, 32 * w + 32); t++)
          if (b.fibers[size_t(t)].wait == Wait::Warp) b.fibers[size_t(t)].wait = Wait::None;
        released = true;
      }
    }
    if (all_done) return;
    if (released) continue;
    if (!all_at_block) deadlock("threads wait at different barriers");
    for (auto& f : b.fibers)
      if (f.wait == Wait::Block) f.wait = Wait::None;
  }
}

// Runs kernel(args...) over grid x block threads with shared_bytes of dynamic shared memory.
template <typename Kernel, typename... Args>
void emulate(dim3 grid, dim3 threads, size_t shared_bytes, Kernel kernel, Args... args) {
  grid_dim = grid;
  block_dim = threads;
  const int n = int(threads.x * threads.y * threads.z);
  const std::function<void()> body = [&] { kernel(args...); };
  job = &body;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        Block state;
        state.fibers.resize(size_t(n));
        state.shared.resize((shared_bytes + 15) / 16 + 1);
        state.exchange.resize(size_t(n));
        state.fragments.resize(size_t(n));
        block = &state;
        block_idx = uint3{bx, by, bz};
        run_block(n, threads, (bx + by + bz) % 2 == 1);
        block = nullptr;
      }
  job = nullptr;
}

// common.cuh's launch(): checks the configuration as cudaLaunchKernel does (the error goes to
// cudaGetLastError) and queues the grid on `stream`, its arguments copied as kernel parameters are.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 threads, size_t shared_bytes, cudaStream_t stream,
            const char* name, Args... args) {
  const cudaError_t error = launch_error(grid, threads, shared_bytes, reinterpret_cast<const void*>(kernel));
  if (error != cudaSuccess) return set_last_error(error);
  enqueue(stream, name, [=] { emulate(grid, threads, shared_bytes, kernel, args...); });
}

}  // namespace zt::emu

#define threadIdx (::zt::emu::thread_idx)
#define blockIdx (::zt::emu::block_idx)
#define blockDim (::zt::emu::block_dim)
#define gridDim (::zt::emu::grid_dim)

inline void __syncthreads() { ::zt::emu::wait_for(::zt::emu::Wait::Block); }
inline void __syncwarp(unsigned = 0xffffffffu) { ::zt::emu::wait_for(::zt::emu::Wait::Warp); }

template <typename V>
V __shfl_xor_sync(unsigned, V v, int lane_mask) {
  static_assert(sizeof(V) <= sizeof(uint64_t));
  using namespace ::zt::emu;
  std::memcpy(&block->exchange[size_t(linear_tid)], &v, sizeof(V));
  wait_for(Wait::Warp);
  const int partner = (linear_tid & ~31) | ((linear_tid & 31) ^ lane_mask);
  V r;
  std::memcpy(&r, &block->exchange[size_t(partner)], sizeof(V));
  wait_for(Wait::Warp);  // nobody overwrites a slot before its partner has read it
  return r;
}

namespace zt::emu {
// mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32 for the calling lane (lib/kernels/cuda/mma.cuh has
// the fragment layout): the warp's lanes meet, each rebuilds A and B from all the lanes' registers
// and computes its own four accumulators. Products of bf16 are exact; the 16 of a dot product are
// summed exactly and rounded once onto the accumulator.
inline void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  auto& mine = block->fragments[size_t(linear_tid)];
  mine = {a[0], a[1], a[2], a[3], b[0], b[1]};
  wait_for(Wait::Warp);
  const int warp0 = linear_tid & ~31, lane = linear_tid & 31;
  auto half = [](uint32_t reg, int which) {
    return ::zt::cuda::bits::bf16_to_f32(uint16_t(which ? reg >> 16 : reg & 0xffffu));
  };
  auto A = [&](int r, int k) {
    const auto& f = block->fragments[size_t(warp0 + (r % 8) * 4 + (k % 8) / 2)];
    return half(f[size_t((r >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0))], k % 2);
  };
  auto B = [&](int k, int c) {
    const auto& f = block->fragments[size_t(warp0 + c * 4 + (k % 8) / 2)];
    return half(f[size_t(4 + (k >= 8 ? 1 : 0))], k % 2);
  };
  for (int i = 0; i < 4; i++) {
    const int r = lane / 4 + (i >= 2 ? 8 : 0), c = (lane % 4) * 2 + (i % 2);
    double sum = 0;
    for (int k = 0; k < 16; k++) sum += double(A(r, k)) * double(B(k, c));
    d[i] += float(sum);
  }
  wait_for(Wait::Warp);  // nobody overwrites a slot before the warp has read it
}
}  // namespace zt::emu

// Device arithmetic intrinsics: IEEE operations rounding to nearest, each rounding once as nvcc
// promises: the volatile result keeps a build with contraction (zt_cuda_kernels_emulated_fma) from
// fusing a product into the sum that uses it.
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
inline float __fdiv_rn(float a, float b) { volatile float r = a / b; return r; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
using std::isfinite;  // CUDA's device isfinite
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

namespace zt::cuda {
// common.cuh's dynamic shared memory, here the emulated block's buffer.
template <typename T>
inline T* dynamic_shared_memory() {
  return reinterpret_cast<T*>(::zt::emu::block->shared.data());
}
}  // namespace zt::cuda
