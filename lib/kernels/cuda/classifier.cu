#include "kernels/cuda/classifier.hpp"

#include "kernels/cuda/classifier_kernels.cuh"

namespace zt::cuda {

using namespace classifier_kernels;

namespace {

void check_shape(int N, int V, int Vp, const char* op) {
  require(N >= 0 && V > 0 && Vp >= V, op, ": bad shape N = ", N, ", V = ", V, ", Vp = ", Vp, " (need V > 0, Vp >= V)");
}

bool vector_path(int Vp, const void* a, const void* b) { return Vp % kVec == 0 && aligned16(a) && aligned16(b); }

void launch_mean(float* mean_loss, const float* losses, const int32_t* targets, int N, cudaStream_t stream) {
  launch(mean_loss_kernel, 1, kMeanBlock, 0, stream, "mean_loss_kernel", mean_loss, losses, targets, N);
}

}  // namespace

void classifier_forward(DType dt, float* lse, float* losses, float* mean_loss, const void* logits,
                        const int32_t* targets, int N, int V, int Vp, cudaStream_t stream) {
  check_shape(N, V, Vp, "classifier_forward");
  if (N == 0) return;
  const bool vector = vector_path(Vp, logits, logits);
  dispatch_activation(dt, "classifier_forward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? classifier_forward_kernel<T, true> : classifier_forward_kernel<T, false>, unsigned(N), kBlock, 0,
           stream, "classifier_forward_kernel", lse, losses, static_cast<const T*>(logits), targets, V, Vp);
  });
  launch_mean(mean_loss, losses, targets, N, stream);
}

void classifier_backward(DType dt, void* dlogits, const void* logits, const float* lse, const int32_t* targets,
                         float scale, int N, int V, int Vp, cudaStream_t stream) {
  check_shape(N, V, Vp, "classifier_backward");
  if (N == 0) return;
  const bool vector = vector_path(Vp, logits, dlogits);
  dispatch_activation(dt, "classifier_backward", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? classifier_backward_kernel<T, true> : classifier_backward_kernel<T, false>, unsigned(N), kBlock,
           0, stream, "classifier_backward_kernel", static_cast<T*>(dlogits), static_cast<const T*>(logits), lse,
           targets, scale, V, Vp);
  });
}

void classifier_fused(DType dt, void* logits, float* lse, float* losses, float* mean_loss, const int32_t* targets,
                      float scale, int N, int V, int Vp, cudaStream_t stream) {
  check_shape(N, V, Vp, "classifier_fused");
  if (N == 0) return;
  const bool vector = vector_path(Vp, logits, logits);
  dispatch_activation(dt, "classifier_fused", [&](auto tag) {
    using T = decltype(tag);
    launch(vector ? classifier_fused_kernel<T, true> : classifier_fused_kernel<T, false>, unsigned(N), kBlock, 0,
           stream, "classifier_fused_kernel", static_cast<T*>(logits), lse, losses, targets, scale, V, Vp);
  });
  launch_mean(mean_loss, losses, targets, N, stream);
}

}  // namespace zt::cuda
