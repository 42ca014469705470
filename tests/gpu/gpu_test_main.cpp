// Catch2's main for the tests that need a GPU: without a CUDA device the whole executable reports
// a skip (exit code 77, CTest's SKIP_RETURN_CODE) instead of failing, so CI without a GPU stays
// green; where a GPU is expected (ZT_GPU_REQUIRED set, as bench/gpu.sh sets it), a CUDA that
// cannot start fails the executable instead. ZT_TEST_SPEC, a Catch test spec such as "[smoke]",
// chooses the tests when the command line names none (bench/gpu_rehearsal.sh runs each GPU test
// executable's [smoke] case on the emulated GPU); a spec that matches no test fails.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    const char* slash = std::strrchr(argv[0], '/');
    const char* name = slash ? slash + 1 : argv[0];
    const char* why = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device";
    const char* required = std::getenv("ZT_GPU_REQUIRED");
    if (required && *required && std::strcmp(required, "0") != 0) {
      std::printf("%s: FAILED: no GPU (%s), and ZT_GPU_REQUIRED is set\n", name, why);
      return 1;
    }
    std::printf("%s: skipped: no GPU (%s)\n", name, why);
    return 77;
  }
  Catch::Session session;
  if (const int code = session.applyCommandLine(argc, argv)) return code;
  const char* spec = std::getenv("ZT_TEST_SPEC");
  Catch::ConfigData& config = session.configData();
  if (spec && *spec && config.testsOrTags.empty()) {
    config.testsOrTags.emplace_back(spec);
    config.warnings = Catch::WarnAbout::What(config.warnings | Catch::WarnAbout::NoTests);
  }
  return session.run();
}
