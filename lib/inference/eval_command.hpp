#pragma once
// `zerotrain eval --model DIR|CHECKPOINT --data FILE [--seq-len T --batch-size B --max-windows N]`:
// the loss and perplexity of a trained model over a token file, its loss mask honoured, on any
// number of ranks (launched as training is). The file is cut into windows as training cuts it
// (docs/data.md) and read in order, rank r taking windows r, r + W, ...; the loss is the sum of
// the token losses over the targets that count, so the world size changes only the order of the
// sums.
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace zt {

class World;

struct EvalOptions {
  std::string model, data, format = "auto";
  int seq_len = 0;         // 0: the model's max_seq_len, at most 1024, at most what the file holds
  int batch_size = 1;      // sequences per forward
  int64_t max_windows = 0;  // 0: every window of the file
  std::string device = "auto", dtype = "fp32";
};

struct EvalResult {
  double loss = 0;          // nats per counted target; NaN without any
  int64_t counted = 0;      // targets that count
  int64_t targets = 0;      // targets read
  int64_t windows = 0;
  int seq_len = 0, batch_size = 0;
};

// Collective over the world's ranks; every rank returns the same result. Throws zt::Error on bad
// input (the same on every rank: they read the same files).
EvalResult evaluate_file(const EvalOptions& options, const World& world);

class EvalCommand {
public:
  explicit EvalCommand(CLI::App& app);
  bool parsed() const;
  int run(int argc, char** argv) const;

private:
  CLI::App* command_;
  EvalOptions options_;
};

}  // namespace zt
