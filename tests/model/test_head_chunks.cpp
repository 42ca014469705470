// The LM head and its loss a chunk of rows at a time (Gpt's logits_bytes): any chunking, even or
// not, gives the loss and gradients of one chunk over every row within fp32 rounding (the head's
// weight gradient is summed chunk by chunk), with ignored targets anywhere, a chunk of them only,
// tied and untied heads (llama); the logits kept are the last chunk's.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/ignored_target.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"

using namespace zt;

namespace {

struct Result {
  float loss;
  std::vector<float> grads, logits;
  int first_logit_row;
};

Result run(const GptShape& shape, int B, int T, int rows_per_chunk, const std::vector<int32_t>& inputs,
           const std::vector<int32_t>& targets) {
  const size_t logits_bytes = size_t(rows_per_chunk) * size_t(shape.padded_vocab()) * sizeof(float);
  Gpt model(shape, B, T, false, cpu_backend(), TrainedParts{}, logits_bytes);
  REQUIRE(model.logit_rows() == std::min(rows_per_chunk, B * T));
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 3);
  params.zero_grads();
  Result r;
  r.loss = model.forward(inputs.data(), targets.data(), B, T, params);
  r.first_logit_row = model.first_logit_row();
  const size_t kept = size_t(B * T - model.first_logit_row()) * size_t(model.padded_vocab());
  r.logits.assign(model.logits(), model.logits() + kept);
  model.backward(params, 0.75f);
  r.grads.assign(params.grad.data(), params.grad.data() + params.grad.size());
  return r;
}

double norm_relative(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); i++) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

TEST_CASE("the LM head in chunks of rows gives the loss and gradients of one chunk", "[model][head]") {
  const int B = 2, T = 16, N = B * T;
  for (const std::string preset : {"toy", "llama-tiny"})
    for (bool tied : {true, false}) {
      if (preset == "toy" && !tied) continue;  // GPT-2's head is its token embedding
      GptShape shape = *gpt_preset(preset);
      shape.tied_head = tied;
      std::vector<int32_t> inputs(N), targets(N);
      Rng rng(11);
      for (int i = 0; i < N; i++) {
        inputs[size_t(i)] = int32_t(rng.below(uint64_t(shape.vocab_size)));
        // Rows 5 to 9 (a whole chunk of 5) and every third row after them carry no loss.
        const bool ignored = (i >= 5 && i < 10) || (i > 10 && i % 3 == 0);
        targets[size_t(i)] = ignored ? kIgnoredTarget : int32_t(rng.below(uint64_t(shape.vocab_size)));
      }
      const Result whole = run(shape, B, T, N, inputs, targets);
      REQUIRE(whole.first_logit_row == 0);
      for (int rows : {1, 5, 7}) {
        INFO(preset << (tied ? " tied" : " untied") << ", " << rows << " rows per chunk");
        const Result chunked = run(shape, B, T, rows, inputs, targets);
        CHECK(std::abs(chunked.loss - whole.loss) <= 1e-6 * std::abs(whole.loss));
        CHECK(norm_relative(chunked.grads, whole.grads) <= 1e-6);
        // The last chunk's logits, as the whole forward computed them.
        CHECK(chunked.first_logit_row == N - rows);
        const std::vector<float> tail(whole.logits.end() - ptrdiff_t(chunked.logits.size()), whole.logits.end());
        CHECK(norm_relative(chunked.logits, tail) <= 1e-6);
      }
    }
}

TEST_CASE("in chunks, no target that counts gives a NaN loss and zero gradients", "[model][head][mask]") {
  const GptShape shape = *gpt_preset("toy");
  const int B = 2, T = 8;
  std::vector<int32_t> inputs(size_t(B * T), 7), targets(size_t(B * T), kIgnoredTarget);
  const Result r = run(shape, B, T, 3, inputs, targets);
  CHECK(std::isnan(r.loss));
  for (float g : r.grads) REQUIRE(g == 0.0f);
}

TEST_CASE("a row of logits not kept is refused", "[model][head]") {
  const GptShape shape = *gpt_preset("toy");
  const int B = 1, T = 10;
  Gpt model(shape, B, T, false, cpu_backend(), TrainedParts{}, 4 * size_t(shape.padded_vocab()) * sizeof(float));
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 3);
  std::vector<int32_t> inputs(size_t(T), 1);
  model.forward(inputs.data(), nullptr, B, T, params);
  REQUIRE(model.first_logit_row() == 6);  // chunks of rows [0, 2), [2, 6), [6, 10)
  std::vector<float> row(size_t(shape.vocab_size));
  model.copy_logits_row(9, row.data());
  REQUIRE_THROWS_WITH(model.copy_logits_row(5, row.data()), Catch::Contains("rows [6, 10)"));
}
