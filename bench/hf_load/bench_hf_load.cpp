// The host memory each rank needs to load a Hugging Face model directory at ZeRO stage 3: under
// mpirun, every rank opens the directory (headers only) and fills its own shard of the parameters,
// in the engine's dtype and in the engine's chunks (upload_params), from lib/hf/hf_weights. It
// prints, per rank, the shard's bytes, the peak growth of its resident memory while loading
// (VmHWM after resetting it, minus VmRSS before), the file bytes it read and the time.
//   mpirun -np 4 build/bench/hf_load/bench_hf_load --model DIR [--dtype bf16]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "hf/hf_weights.hpp"
#include "comm/control_channel.hpp"
#include "comm/mpi_communicator.hpp"
#include "config/config.hpp"
#include "config/model_block.hpp"
#include "core/buffer.hpp"
#include "core/dtype.hpp"
#include "model/gpt_layout.hpp"
#include "zero/partition.hpp"

namespace {

// A field of /proc/self/status in bytes (VmRSS, VmHWM).
size_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return size_t(std::stoull(line.substr(field.size() + 1))) * 1024;
  return 0;
}

// Resets VmHWM to the current resident size (Linux: "5" to clear_refs).
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  return bool(out.flush());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Host memory of loading a Hugging Face model directory's shard at ZeRO stage 3"};
  std::string model, dtype_name = "bf16";
  app.add_option("--model", model, "the model directory")->required();
  app.add_option("--dtype", dtype_name, "the dtype the parameters are held in (fp32, bf16)");
  CLI11_PARSE(app, argc, argv);
  auto comm = zt::make_mpi_communicator();
  const int rank = comm->rank(), world = comm->world_size();
  const zt::DType dtype = zt::dtype_from_name(dtype_name);

  const zt::GptShape shape = zt::config::resolve_model_argument(model).shape;
  const auto opened = std::chrono::steady_clock::now();
  const zt::HfWeights weights(model, zt::hf_tensors(shape));
  const zt::Partition partition(weights.numel(), world, rank);
  const zt::Range own = partition.own();
  const size_t shard_bytes = own.size() * zt::dtype_size(dtype);
  // The shard as stage 3 holds it, allocated and not yet touched, so not yet resident: filling it
  // counts in the peak.
  std::unique_ptr<uint8_t[]> shard(new uint8_t[shard_bytes]);
  if (!reset_peak() && rank == 0) std::fprintf(stderr, "cannot reset VmHWM: the peak includes what came before\n");
  const size_t rss_before = status_bytes("VmRSS");

  const auto start = std::chrono::steady_clock::now();
  constexpr size_t kChunk = 16384;  // upload_params' chunk
  std::vector<float> values(kChunk);
  for (size_t done = 0; done < own.size(); done += kChunk) {
    const zt::Range chunk{own.begin + done, own.begin + std::min(own.size(), done + kChunk)};
    const zt::Range real = chunk.intersect({0, partition.numel()});
    std::fill(values.begin(), values.end(), 0.0f);
    if (!real.empty()) weights.read(values.data() + (real.begin - chunk.begin), real.begin, real.size());
    zt::from_f32(dtype, values.data(), shard.get() + done * zt::dtype_size(dtype), chunk.size());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t peak = status_bytes("VmHWM") - rss_before;
  comm->control().barrier();
  for (int r = 0; r < world; ++r) {
    if (r == rank)
      std::printf("rank %d/%d: %s, shard %.1f MB (%s), load-phase peak RSS growth %.1f MB = %.3fx the shard, "
                  "read %.1f MB of the files in %.2f s (opening %.3f s)\n",
                  rank, world, weights.describe().c_str(), shard_bytes / 1e6, dtype_name.c_str(), peak / 1e6,
                  double(peak) / double(shard_bytes), weights.bytes_read() / 1e6, seconds,
                  std::chrono::duration<double>(start - opened).count());
    std::fflush(stdout);
    comm->control().barrier();
  }
  return 0;
}
