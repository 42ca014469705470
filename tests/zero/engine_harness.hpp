#pragma once
// Builds small training runs for the engine tests: a GPT whose parameter count is not a multiple
// of the world size, on the shipped text corpus, with bucket sizes that cut groups in odd places.
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "comm/communicator.hpp"
#include "config/config.hpp"
#include "tinytext_run.hpp"
#include "train/trainer.hpp"

namespace zt::test {

struct RunSpec {
  int stage = 0;
  std::string dtype = "fp32";
  int world = 1;
  int micro = 2;
  int accumulation = 1;
  int64_t bucket = 1000;  // elements: cuts groups in odd places
  bool overlap = true;
};

inline config::Config make_config(const RunSpec& s) {
  config::Config c;
  c.world_size = s.world;
  c.train_micro_batch_size_per_gpu = s.micro;
  c.gradient_accumulation_steps = s.accumulation;
  c.train_batch_size = int64_t(s.micro) * s.accumulation * s.world;
  c.gradient_clipping = 1.0;
  c.zero.stage = s.stage;
  c.zero.reduce_bucket_size = s.bucket;
  c.zero.allgather_bucket_size = s.bucket + 333;
  c.zero.overlap_comm = s.overlap;
  c.zero.stage3_param_persistence_threshold = 0;
  c.zero.stage3_prefetch_bucket_size = 3000;
  c.zero.stage3_max_live_parameters = 20000;
  c.zero.stage3_max_reuse_distance = 1;  // keeps the embeddings between the LM head's forward and backward
  c.bf16.enabled = s.dtype == "bf16";
  c.fp16.enabled = s.dtype == "fp16";
  c.fp16.initial_scale_power = 8;
  c.communication_data_type = s.dtype;
  c.optimizer.lr = 3e-3;
  c.optimizer.beta1 = 0.9;
  c.optimizer.beta2 = 0.95;
  c.optimizer.weight_decay = 0.1;
  // 22525 parameters = 5^2 x 17 x 53: not a multiple of 2, 3 or 4, so the last shard is padded.
  c.model = {"custom", GptShape(2, 5, 25, 256, 17)};
  short_tinytext_run(c, 16);
  c.training.eval_batches = 4;  // where a test evaluates: a few windows, not the whole file
  return c;
}

struct RunResult {
  std::vector<double> losses;
  std::vector<float> params;  // consolidated fp32 master weights after the run
};

inline RunResult train(const config::Config& c, Communicator& comm, int steps) {
  Trainer trainer(c, comm);
  RunResult r;
  for (int s = 1; s <= steps; ++s) r.losses.push_back(trainer.train_step(s).loss);
  r.params.resize(trainer.model().layout().total);
  trainer.engine().gather_master(r.params.data());
  return r;
}

// What `trainer`'s step 2 sends per collective (step 1 runs first: stage 3 records its fetch order
// there).
inline CommStats second_step_traffic(Trainer& trainer, Communicator& comm) {
  trainer.train_step(1);
  const CommStats before = comm.stats();
  trainer.train_step(2);
  CommStats sent = comm.stats();
  for (size_t i = 0; i < sent.bytes_sent.size(); ++i) sent.bytes_sent[i] -= before.bytes_sent[i];
  return sent;
}

// Every parameter of the flat buffer as the model reads it (frozen ones included), through the
// engine's fetch: collective at stage 3.
inline std::vector<float> gather_params(Trainer& trainer) {
  const ParamLayout& layout = trainer.model().layout();
  std::vector<float> out(layout.total);
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const ConstView v = trainer.engine().fetch(int(g));
    std::memcpy(out.data() + layout.groups[g].offset, v.data, layout.groups[g].size * sizeof(float));
    trainer.engine().release(int(g));
  }
  return out;
}

inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace zt::test
