// training.device's choice in a build with the CUDA backend, on any machine: what cpu, cuda and
// auto give, and the messages of what cannot be had (with or without a GPU present).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backend.hpp"

using namespace zt;
using Catch::Matchers::Contains;

TEST_CASE("cpu is the CPU whatever the machine has", "[backend][smoke]") {
  CHECK(select_backend(DeviceChoice::Cpu, 0, 1, DType::BF16).device.kind() == DeviceKind::Cpu);
  CHECK(&select_backend(DeviceChoice::Cpu, 3, 1, DType::F16) == &cpu_backend());
}

TEST_CASE("fp16 training on the GPU is refused, naming the keys to change; auto trains it on the CPU", "[backend]") {
  CHECK_THROWS_WITH(select_backend(DeviceChoice::Cuda, 0, 1, DType::F16),
                    Contains("training.device") && Contains("fp16.enabled") && Contains("bf16.enabled"));
  CHECK(&select_backend(DeviceChoice::Auto, 0, 1, DType::F16) == &cpu_backend());
}

TEST_CASE("auto uses GPUs only when every rank of the machine has one", "[backend]") {
  const int devices = cuda::visible_devices();
  const char* chosen = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = chosen ? chosen : "";
  unsetenv("CUDA_VISIBLE_DEVICES");
  CHECK(&select_backend(DeviceChoice::Auto, 0, devices + 1, DType::BF16) == &cpu_backend());
  if (devices == 1) {
    // One GPU shown to each of two ranks through CUDA_VISIBLE_DEVICES: the launcher gave each its own.
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    CHECK(select_backend(DeviceChoice::Auto, 1, 2, DType::BF16).device.kind() == DeviceKind::Cuda);
  }
  if (chosen) setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  else unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST_CASE("cuda and auto follow the GPUs this process sees", "[backend]") {
  const int devices = cuda::visible_devices();  // never throws, GPU or not
  REQUIRE(devices >= 0);
  if (devices == 0) {
    CHECK(&select_backend(DeviceChoice::Auto, 0, 1, DType::BF16) == &cpu_backend());
    CHECK(&select_backend(DeviceChoice::Auto, 0, 1, DType::F16) == &cpu_backend());
    CHECK_THROWS_WITH(select_backend(DeviceChoice::Cuda, 0, 1, DType::F32),
                      Contains("training.device") && Contains("needs a GPU") && Contains("\"cpu\""));
    return;
  }
  Backend& gpu = select_backend(DeviceChoice::Auto, 0, 1, DType::BF16);
  CHECK(gpu.device.kind() == DeviceKind::Cuda);
  CHECK(gpu.model.dtype() == DType::BF16);
  CHECK(&select_backend(DeviceChoice::Cuda, 0, 1, DType::BF16) == &gpu);
  CHECK(select_backend(DeviceChoice::Cuda, 0, 1, DType::F32).model.dtype() == DType::F32);
  CHECK(&select_backend(DeviceChoice::Cuda, 0, 1, DType::F32).device == &gpu.device);  // one GPU per process
  // A launcher that shows each rank its own GPU shows it as device 0, whatever the local rank.
  CHECK(&select_backend(DeviceChoice::Cuda, devices, 2 * devices, DType::F32).device == &gpu.device);
  if (devices > 1)
    CHECK_THROWS_WITH(select_backend(DeviceChoice::Cuda, 1, devices, DType::F32),
                      Contains("training.device") && Contains("already computes on GPU 0"));
}

TEST_CASE("an unknown device name is refused", "[backend]") {
  CHECK_THROWS_WITH(kDeviceChoiceNames.parse("tpu", "training.device"),
                    Contains("training.device") && Contains("auto, cpu or cuda"));
}
