// CUDA graphs as the CUDA backend uses them: work captured on a stream, and on a stream forked from
// it through events, replays launch after launch on what the captured buffers hold then, with the
// bits of the same work run eagerly; a capture refuses what CUDA refuses (a synchronisation of the
// captured stream, an allocation, a fork never joined back) and ends without a graph. Built for a
// GPU and for the emulator, which must agree with it.
#include "cuda_test_support.hpp"
#include "kernels/cuda/cuda_residual.hpp"
#include "kernels/cuda/cuda_vector_ops.hpp"

using namespace zt;
using namespace zt::test;

namespace {

void ok(cudaError_t e, const char* what) {
  INFO(what << ": " << cudaGetErrorString(e));
  REQUIRE(e == cudaSuccess);
}

struct Streams {
  cudaStream_t main = nullptr, side = nullptr;
  cudaEvent_t forked = nullptr, joined = nullptr;
  Streams() {
    ok(cudaStreamCreateWithFlags(&main, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    ok(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    ok(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    ok(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  }
  ~Streams() {
    cudaStreamSynchronize(main);
    cudaStreamSynchronize(side);
    cudaEventDestroy(forked);
    cudaEventDestroy(joined);
    cudaStreamDestroy(main);
    cudaStreamDestroy(side);
  }
};

}  // namespace

TEST_CASE("a captured graph replays on the buffers' current values, with the eager bits", "[cuda][graph]") {
  const size_t n = 3000;
  Streams st;
  DeviceTensor a(DType::F32, n), b(DType::F32, n), c(DType::F32, n), sum(DType::F32, n), out(DType::F32, n);
  // out = 2 · (a + b) + c, the doubling on a side stream forked from the main one and joined back.
  auto work = [&] {
    cuda::residual_forward(DType::F32, sum.ptr(), a.ptr(), b.ptr(), n, st.main);
    ok(cudaEventRecord(st.forked, st.main), "cudaEventRecord");
    ok(cudaStreamWaitEvent(st.side, st.forked, 0), "cudaStreamWaitEvent");
    cuda::scale(DType::F32, sum.ptr(), 2.0f, n, st.side);
    ok(cudaEventRecord(st.joined, st.side), "cudaEventRecord");
    ok(cudaStreamWaitEvent(st.main, st.joined, 0), "cudaStreamWaitEvent");
    cuda::residual_forward(DType::F32, out.ptr(), sum.ptr(), c.ptr(), n, st.main);
  };
  auto load = [&](uint64_t seed) {
    a.buffer.upload(encode(DType::F32, random_vec(n, seed)).data(), n * 4);
    b.buffer.upload(encode(DType::F32, random_vec(n, seed + 1)).data(), n * 4);
    c.buffer.upload(encode(DType::F32, random_vec(n, seed + 2)).data(), n * 4);
  };

  ok(cudaStreamBeginCapture(st.main, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  work();
  cudaGraph_t graph = nullptr;
  ok(cudaStreamEndCapture(st.main, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");

  for (uint64_t step = 0; step < 3; ++step) {
    INFO("step " << step);
    load(10 * step + 1);
    work();
    ok(cudaStreamSynchronize(st.main), "cudaStreamSynchronize");
    const Bytes eager = out.bits();
    out.buffer.upload(encode(DType::F32, Vec(n, -1.0f)).data(), n * 4);  // the replay must write it all
    ok(cudaGraphLaunch(exec, st.main), "cudaGraphLaunch");
    ok(cudaStreamSynchronize(st.main), "cudaStreamSynchronize");
    CHECK(out.bits() == eager);
  }
  ok(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  ok(cudaGraphDestroy(graph), "cudaGraphDestroy");
}

TEST_CASE("a capture refuses synchronisation, allocation and an unjoined fork", "[cuda][graph][errors]") {
  const size_t n = 256;
  Streams st;
  DeviceTensor x(DType::F32, n);
  cudaGraph_t graph = nullptr;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;

  SECTION("synchronising the captured stream") {
    ok(cudaStreamBeginCapture(st.main, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
    cuda::scale(DType::F32, x.ptr(), 2.0f, n, st.main);
    CHECK(cudaStreamSynchronize(st.main) == cudaErrorStreamCaptureUnsupported);
    ok(cudaStreamIsCapturing(st.main, &status), "cudaStreamIsCapturing");
    CHECK(status == cudaStreamCaptureStatusInvalidated);
    CHECK(cudaStreamEndCapture(st.main, &graph) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("allocating device memory") {
    ok(cudaStreamBeginCapture(st.main, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
    cuda::scale(DType::F32, x.ptr(), 2.0f, n, st.main);
    void* p = nullptr;
    CHECK(cudaMalloc(&p, 1024) != cudaSuccess);
    CHECK(cudaStreamEndCapture(st.main, &graph) == cudaErrorStreamCaptureInvalidated);
    if (p) cudaFree(p);
  }
  SECTION("a forked stream that never joins back") {
    ok(cudaStreamBeginCapture(st.main, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
    ok(cudaEventRecord(st.forked, st.main), "cudaEventRecord");
    ok(cudaStreamWaitEvent(st.side, st.forked, 0), "cudaStreamWaitEvent");
    cuda::scale(DType::F32, x.ptr(), 2.0f, n, st.side);
    CHECK(cudaStreamEndCapture(st.main, &graph) == cudaErrorStreamCaptureUnjoined);
  }
  cudaGetLastError();  // the refused calls' errors are not the next test's
  CHECK(graph == nullptr);
  // Both streams are out of the capture and run work again.
  for (cudaStream_t s : {st.main, st.side}) {
    ok(cudaStreamIsCapturing(s, &status), "cudaStreamIsCapturing");
    CHECK(status == cudaStreamCaptureStatusNone);
  }
  x.buffer.upload(encode(DType::F32, Vec(n, 1.5f)).data(), n * 4);
  cuda::scale(DType::F32, x.ptr(), 2.0f, n, st.main);
  ok(cudaStreamSynchronize(st.main), "cudaStreamSynchronize");
  CHECK(x.values() == Vec(n, 3.0f));
}
