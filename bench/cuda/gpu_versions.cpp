// What a GPU run stands on, printed before anything runs there so that a failure can be read against
// it: the driver's CUDA version, the CUDA runtime, cuBLASLt and NCCL this program loaded (and the
// files they came from), cuDNN (looked up at run time, as zerotrain does not link it: libcudnn.so.9
// on the library path), and every visible device. Exit code 0 whatever it finds; 1 only when
// ZT_GPU_REQUIRED is set and no device answers.
//
//   gpu_versions
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// "12.8" from CUDA's 12080.
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// "2.28.3" from a version coded major·10000 + minor·100 + patch (cuBLASLt, NCCL, cuDNN 9).
std::string coded_version(long long v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// The file a symbol was loaded from, or "?".
std::string file_of(const void* symbol) {
  Dl_info info{};
  return dladdr(symbol, &info) && info.dli_fname ? info.dli_fname : "?";
}

void print_cudnn() {
  for (const char* name : {"libcudnn.so.9", "libcudnn.so"}) {
    void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    using GetVersion = size_t (*)();
    const auto get = reinterpret_cast<GetVersion>(dlsym(lib, "cudnnGetVersion"));
    if (get)
      std::printf("cuDNN:    %s (%s)\n", coded_version((long long)get()).c_str(), file_of((const void*)get).c_str());
    else std::printf("cuDNN:    %s has no cudnnGetVersion\n", name);
    return;
  }
  std::printf("cuDNN:    not found (%s)\n", dlerror());
}

}  // namespace

int main() {
  int driver = 0, runtime = 0;
  const cudaError_t driver_status = cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (driver_status != cudaSuccess || driver == 0)
    std::printf("driver:   none (%s)\n",
                driver_status != cudaSuccess ? cudaGetErrorString(driver_status) : "no driver");
  else
    std::printf("driver:   CUDA %s\n", cuda_version(driver).c_str());
  std::printf("runtime:  CUDA %s (%s)\n", cuda_version(runtime).c_str(),
              file_of((const void*)&cudaRuntimeGetVersion).c_str());
  std::printf("cuBLASLt: %s (%s)\n", coded_version((long long)cublasLtGetVersion()).c_str(),
              file_of((const void*)&cublasLtGetVersion).c_str());
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess)
    std::printf("NCCL:     %s (%s)\n", coded_version(nccl).c_str(), file_of((const void*)&ncclGetVersion).c_str());
  else
    std::printf("NCCL:     ncclGetVersion failed\n");
  print_cudnn();

  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("devices:  none (%s)\n", status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device");
    const char* required = std::getenv("ZT_GPU_REQUIRED");
    return required && *required && std::strcmp(required, "0") != 0 ? 1 : 0;
  }
  for (int d = 0; d < devices; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      std::printf("device %d: cudaGetDeviceProperties failed\n", d);
      continue;
    }
    std::printf("device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, L2 %d MiB\n", d, p.name, p.major, p.minor,
                p.multiProcessorCount, double(p.totalGlobalMem) / double(1ull << 30), p.l2CacheSize >> 20);
  }
  return 0;
}
