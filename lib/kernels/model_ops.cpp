#include "kernels/model_ops.hpp"

#include "core/error.hpp"

namespace zt {

namespace {

[[noreturn]] void no_experts() {
  fail("this backend has no mixture-of-experts operators (models with experts train on training.device cpu)");
}

}  // namespace

void ModelOps::moe_route(float*, int32_t*, float*, const void*, int, int, int, bool, bool) { no_experts(); }
void ModelOps::moe_gather(void*, const void*, const int32_t*, int, int) { no_experts(); }
void ModelOps::moe_combine(void*, const void*, const float*, const int32_t*, int, int, int) { no_experts(); }
void ModelOps::moe_combine_backward(void*, float*, const void*, const void*, const float*, const int32_t*, int, int,
                                    int) {
  no_experts();
}
void ModelOps::moe_scatter(void*, const void*, const int32_t*, int, int, int, GradInto) { no_experts(); }
void ModelOps::moe_route_backward(void*, const float*, const float*, const int32_t*, const float*, int, int, int, bool,
                                  bool) {
  no_experts();
}

void ModelOps::moe_group(int32_t*, int32_t*, int32_t*, const int32_t*, int, int, int) { no_experts(); }
void ModelOps::moe_expert_forward(void*, const void*, const void*, size_t, const int32_t*, int, int, int, int) {
  no_experts();
}
void ModelOps::moe_expert_backward(void*, void*, const void*, const void*, const void*, size_t, const int32_t*, int,
                                   int, int, int, GradInto) {
  no_experts();
}
void ModelOps::moe_route_stats(double*, const float*, const int32_t*, const int32_t*, int, int, int, int) {
  no_experts();
}
void ModelOps::moe_aux_grad(float*, const double*, int, int, float) { no_experts(); }
void ModelOps::moe_aux_accumulate(double*, const double*, int, int) { no_experts(); }
void ModelOps::moe_zero_padding(void*, const int32_t*, int, int, int) { no_experts(); }
void ModelOps::moe_gate_add(void*, const void*, const void*, int, int) { no_experts(); }
void ModelOps::moe_gate_add_backward(void*, void*, const void*, const void*, const void*, int, int) { no_experts(); }

void ModelOps::matmul_fp32_forward(float* out, const void* inp, const float* weight, float*, int N, int C, int OC,
                                   WeightLayout layout) {
  if (dtype() != DType::F32) fail("this backend has no fp32 projections in {}", dtype_name(dtype()));
  matmul_forward(out, inp, weight, nullptr, N, C, OC, layout);
}

void ModelOps::matmul_fp32_backward(void* dinp, float* dweight, const float* dout, const void* inp, const float* weight,
                                    float*, int N, int C, int OC, WeightLayout layout, GradInto dinp_into) {
  if (dtype() != DType::F32) fail("this backend has no fp32 projections in {}", dtype_name(dtype()));
  matmul_backward(dinp, dweight, nullptr, dout, inp, weight, N, C, OC, layout, dinp_into);
}

}  // namespace zt
