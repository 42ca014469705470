#pragma once
// What training and evaluation read their micro-batches from, whatever the data: the windows of a
// token stream (sampler.hpp: plain text, pretraining; docs/data.md, "Which tokens a step reads") or
// rows of whole samples (sample_sampler.hpp: record data; docs/data.md, "Samples"). A micro-batch
// is B rows of T tokens, inputs and targets [B, T] row-major; rows of samples also say where each
// sample starts (RowSegments), and T may be shorter than seq_len (padding to the longest row).
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/row_segments.hpp"
#include "data/dataset.hpp"
#include "data/sample_rows.hpp"

namespace zt {

// The shape of a filled micro-batch.
struct BatchShape {
  int batch = 0, seq = 0;
  bool stand_in = false;  // evaluation: a rank's micro-batch in a round where it has none, counting nothing
  int64_t tokens() const { return int64_t(batch) * seq; }
};

// What one optimizer step reads over all its ranks and micro-batches.
struct StepTokens {
  int64_t counted = 0;     // targets that count: the divisor of the step's mean loss
  int64_t chosen = 0;      // preference pairs: those of the chosen rows (the divisor of their mean NLL)
  int64_t tokens = 0;      // the samples' tokens (windows: every token)
  int64_t row_tokens = 0;  // the rows' tokens, padding included
  int64_t attended = 0;    // the sum over samples of length²: the query-key pairs attention computes
  // The same with each query's keys cut to an attention window w (sliding layers): the sum over
  // samples of length·min(length, w); `attended` without one.
  int64_t attended_in_window = 0;
};

// Where the data order of a run stands, as a checkpoint keeps it.
struct SamplerState {
  uint64_t seed = 0;
  bool shuffle = false;
  int64_t next_step = 0;          // the first step (counting from 0) not yet trained
  std::string unit = "windows";   // "windows" or "rows" (of samples)
  // windows
  int64_t window_tokens = 0;      // B*T when saved
  int64_t num_windows = 0;        // K when saved
  int64_t windows_per_step = 0;   // GA*W when saved
  int64_t next_window = 0;        // the global index of the first window not yet read
  // rows of samples
  int64_t num_rows = 0;           // rows of an epoch when saved
  int64_t rows_per_step = 0;      // B*GA*W when saved
  int64_t next_row = 0;           // the global index of the first row not yet read
  std::string layout;             // how the rows were made: packing, padding, truncation, seq_len
  std::vector<DataFile> files;    // the files of the stream when saved (empty in older checkpoints)

  // The position as a number of epochs (for a resume that changes the unit).
  double epochs() const;
};
// The fields every sampler's state holds: the order's seed and shuffle, the step to continue from,
// the files read.
SamplerState sampler_state(uint64_t seed, bool shuffle, int64_t next_step, std::vector<DataFile> files);
nlohmann::json sampler_state_to_json(const SamplerState& state);
SamplerState sampler_state_from_json(const nlohmann::json& j);  // errors name the missing key
// Warns when the files a state was saved with are not `files` (compared by name and token count,
// wherever they lie now: a checkpoint may move between machines); `continues_at` says where the
// run goes on ("window 12").
void warn_if_files_changed(const SamplerState& saved, const std::vector<DataFile>& files,
                           const std::string& continues_at);
// Warns when the data order is not the saved one: the shuffle, or what `changed` says (`what`:
// "window 64 -> 32 tokens, 10 -> 20 windows").
void warn_if_order_changed(const SamplerState& saved, bool shuffle, bool changed, const std::string& what);

class DataSampler {
public:
  virtual ~DataSampler() = default;
  // Rows of samples, each micro-batch with its RowSegments; false: windows, every row one sample.
  virtual bool has_samples() const = 0;
  virtual int batch() const = 0;
  // The rows of a micro-batch: batch(), or twice as many for preference pairs (batch() pairs).
  virtual int micro_batch_rows() const { return batch(); }
  virtual int seq_len() const = 0;  // the longest row
  // The most targets that count in one micro-batch (training or evaluation), as far as the data
  // says: the rows the LM head computes at most (model/gpt.hpp). Every target of every row by default.
  virtual int max_counted_targets() const { return micro_batch_rows() * seq_len(); }
  // An epoch in units ("windows" or "rows") and what a step reads of them.
  virtual int64_t epoch_units() const = 0;
  virtual int64_t units_per_step() const = 0;
  virtual const char* unit_name() const = 0;

  // Fills optimizer step `step` (from 0), micro-step `micro` of this rank: inputs and targets (room
  // for batch() x seq_len() each; targets that do not count are kIgnoredTarget) and, with samples,
  // `segments` (room as large). Returns the micro-batch's shape.
  virtual BatchShape fill_micro_batch(int64_t step, int micro, int32_t* inputs, int32_t* targets,
                                      RowSegments* segments) const = 0;
  // What step `step` reads on all ranks; every rank computes the same from the data. `window`: the
  // attention window attended_in_window counts within (0: none).
  virtual StepTokens step_tokens(int64_t step, int window) const = 0;

  // Evaluation in order, never shuffled: the micro-batches it covers for `requested` (0: all of
  // them), the rounds every rank runs (rank r takes micro-batches r, r + W, ...), and round `round`
  // of this rank. A rank with none in the round gets a micro-batch whose targets all are
  // kIgnoredTarget (its forward counts for nothing and keeps the ranks' collectives in step).
  virtual int64_t eval_batches(int64_t requested) const = 0;
  virtual int64_t eval_rounds(int64_t batches) const = 0;
  virtual BatchShape fill_eval_batch(int64_t round, int64_t batches, int32_t* inputs, int32_t* targets,
                                     RowSegments* segments) const = 0;

  virtual SamplerState state(int64_t next_step) const = 0;
  // Adopts a saved position and returns the step to continue from (SamplerState::next_step).
  virtual int64_t restore(const SamplerState& state) = 0;
  // What the data becomes, for the start line and --dry-run ("93 windows of 1 x 64 + 1 tokens").
  virtual std::string describe() const = 0;
};

// The sampler of `data`: rows of samples when it has samples and options.packing is none or pack,
// else windows of B x seq_len tokens. Errors name the data (too few tokens, no sample left).
std::unique_ptr<DataSampler> make_sampler(const TokenDataset& data, const RowOptions& options, int batch,
                                          int world_size, int rank, int grad_accum, bool shuffle, uint64_t seed);

}  // namespace zt
