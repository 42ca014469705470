// training.device's choice in a build with the CUDA backend, on any machine: what cpu, cuda and
// auto give, and the messages of what cannot be had (with or without a GPU present).
#include <catch2/catch.hpp>

#include <string>

#include "core/error.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/backend.hpp"

using namespace zt;
using Catch::Matchers::Contains;

TEST_CASE("cpu is the CPU whatever the machine has", "[backend]") {
  CHECK(select_backend("cpu", 0, DType::BF16).device.kind() == DeviceKind::Cpu);
  CHECK(&select_backend("cpu", 3, DType::F16) == &cpu_backend());
}

TEST_CASE("fp16 training on the GPU is refused, naming the keys to change", "[backend]") {
  for (const char* device : {"cuda", "auto"}) {
    if (std::string(device) == "auto" && cuda::visible_devices() == 0) continue;  // auto: the CPU then
    INFO(device);
    CHECK_THROWS_WITH(select_backend(device, 0, DType::F16),
                      Contains("training.device") && Contains("fp16.enabled") && Contains("bf16.enabled"));
  }
}

TEST_CASE("cuda and auto follow the GPUs this process sees", "[backend]") {
  const int devices = cuda::visible_devices();  // never throws, GPU or not
  REQUIRE(devices >= 0);
  if (devices == 0) {
    CHECK(&select_backend("auto", 0, DType::BF16) == &cpu_backend());
    CHECK(&select_backend("auto", 0, DType::F16) == &cpu_backend());
    CHECK_THROWS_WITH(select_backend("cuda", 0, DType::F32),
                      Contains("training.device") && Contains("needs a GPU") && Contains("\"cpu\""));
    return;
  }
  Backend& gpu = select_backend("auto", 0, DType::BF16);
  CHECK(gpu.device.kind() == DeviceKind::Cuda);
  CHECK(gpu.model.dtype() == DType::BF16);
  CHECK(&select_backend("cuda", 0, DType::BF16) == &gpu);
  CHECK(select_backend("cuda", 0, DType::F32).model.dtype() == DType::F32);
  CHECK(&select_backend("cuda", 0, DType::F32).device == &gpu.device);  // one GPU per process
  CHECK_THROWS_WITH(select_backend("cuda", devices, DType::F32),
                    Contains("training.device") && Contains("no GPU of its own"));
}

TEST_CASE("an unknown device name is refused", "[backend]") {
  CHECK_THROWS_WITH(select_backend("tpu", 0, DType::F32), Contains("training.device") && Contains("auto, cpu or cuda"));
}
