// Catch2's main for the GPU tests: without a CUDA device the whole executable reports a skip
// (exit code 77, CTest's SKIP_RETURN_CODE) instead of failing.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    const char* slash = std::strrchr(argv[0], '/');
    std::printf("%s: skipped: no GPU (%s)\n", slash ? slash + 1 : argv[0],
                status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
