// The LM head and its loss a chunk of rows at a time (Gpt's logits_bytes): any chunking, even or
// not, gives the loss and gradients of one chunk over every row within fp32 rounding (the head's
// weight gradient is summed chunk by chunk), with ignored targets anywhere, a chunk of them only,
// tied and untied heads (llama); the logits kept are the last chunk's. The head on the rows whose
// target counts only (masked SFT, preference pairs' completions) against the head on every row:
// the same per-row losses (to the bit in one chunk), the gradients within fp32 rounding, with Gemma's
// soft cap.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/ignored_target.hpp"
#include "core/rng.hpp"
#include "model/gpt.hpp"

using namespace zt;

namespace {

// A forward and backward with the head in chunks of `rows_per_chunk` rows, on the rows whose target
// counts (the default) or on every row; by dloss, or by the target weights of preference training.
struct Result {
  float loss;
  std::vector<float> grads, logits, losses;
  int first_logit_row, head_rows;
};

Result run(const GptShape& shape, int B, int T, int rows_per_chunk, const std::vector<int32_t>& inputs,
           const std::vector<int32_t>& targets, bool counted_rows_only = true,
           const std::vector<float>* target_weights = nullptr) {
  const size_t logits_bytes = size_t(rows_per_chunk) * size_t(shape.padded_vocab()) * sizeof(float);
  Gpt model(shape, B, T, false, cpu_backend(), TrainedParts{}, logits_bytes);
  REQUIRE(model.logit_rows() == std::min(rows_per_chunk, B * T));
  model.set_head_on_counted_rows(counted_rows_only);
  ResidentParams params(model.layout());
  model.init_params(params.params.data(), 0, model.layout().total, 3);
  params.zero_grads();
  Result r;
  r.loss = model.forward(inputs.data(), targets.data(), B, T, params);
  r.first_logit_row = model.first_logit_row();
  r.head_rows = model.head_rows();
  const size_t kept = size_t(model.head_rows() - model.first_logit_row()) * size_t(model.padded_vocab());
  r.logits.assign(model.logits(), model.logits() + kept);
  r.losses.resize(size_t(B * T));
  model.copy_losses(r.losses.data());
  model.backward(params, 0.75f, target_weights ? target_weights->data() : nullptr);
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
        // The last chunk's logits, as the whole forward computed them: of the rows whose target counts.
        CHECK(chunked.first_logit_row == chunked.head_rows - rows);
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

namespace {

// Row by row: the same loss within `rtol` (0: the same bits), NaN where the target does not count.
void check_same_losses(const std::vector<float>& got, const std::vector<float>& want, double rtol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); i++) {
    INFO("row " << i);
    if (std::isnan(want[i]))
      REQUIRE(std::isnan(got[i]));
    else
      REQUIRE(std::abs(double(got[i]) - want[i]) <= rtol * std::abs(double(want[i])));
  }
}

std::vector<GptShape> head_shapes() {
  GptShape untied = *gpt_preset("llama-tiny");
  untied.tied_head = false;
  GptShape capped = *gpt_preset("llama-tiny");  // Gemma 2's soft-capped logits
  capped.model_type = ModelType::Gemma2;
  capped.tied_head = true;
  capped.query_pre_attn_scalar = 8;
  capped.final_logit_softcapping = 2.0;
  return {*gpt_preset("toy"), untied, capped};
}

}  // namespace

TEST_CASE("the LM head on the rows whose target counts gives the full head's loss and gradients",
          "[model][head][mask]") {
  // Masked SFT: a prompt of 6 rows, then answers with a masked turn inside; the second row packs
  // two samples, the last target of each ignored.
  const int B = 2, T = 16, N = B * T;
  for (const GptShape& shape : head_shapes()) {
    std::vector<int32_t> inputs(N), targets(N);
    Rng rng(23);
    for (int i = 0; i < N; i++) {
      inputs[size_t(i)] = int32_t(rng.below(uint64_t(shape.vocab_size)));
      const int t = i % T;
      const bool ignored = i < T ? (t < 6 || (t >= 10 && t < 12) || t == T - 1) : (t < 3 || t == 7 || t == 8);
      targets[size_t(i)] = ignored ? kIgnoredTarget : int32_t(rng.below(uint64_t(shape.vocab_size)));
    }
    int counted = 0;
    for (int32_t t : targets) counted += t != kIgnoredTarget;
    const Result full = run(shape, B, T, N, inputs, targets, false);
    REQUIRE(full.head_rows == N);
    for (int rows : {N, 7, 1}) {
      INFO(describe(shape) << ", " << rows << " rows per chunk");
      const Result counted_only = run(shape, B, T, rows, inputs, targets);
      CHECK(counted_only.head_rows == counted);
      // Each row's logits are the same products: in one chunk of every row the same bits, in other
      // chunks the GEMM's blocking of rows may round them otherwise.
      check_same_losses(counted_only.losses, full.losses, rows == N ? 0.0 : 1e-6);
      if (rows == N) CHECK(counted_only.loss == full.loss);
      CHECK(std::abs(counted_only.loss - full.loss) <= 1e-6 * std::abs(full.loss));
      // The head's weight gradient sums fewer zero products: fp32 rounding at most.
      CHECK(norm_relative(counted_only.grads, full.grads) <= 1e-6);
    }
  }
}

TEST_CASE("the LM head on the completions of preference pairs, by target weights, gives the full head's gradients",
          "[model][head][preference]") {
  // Two pairs: rows of prompt + chosen and prompt + rejected, the prompt's targets and the padding
  // after the completion ignored; each target weighted on its own, as ORPO weighs a chosen row's
  // (its completion's sum and the NLL's mean), the weights of the targets that do not count
  // garbage that must not be read.
  const int B = 4, T = 12, N = B * T;
  const int prompt[] = {5, 5, 3, 3}, completion[] = {4, 6, 7, 2};
  for (const GptShape& shape : head_shapes()) {
    INFO(describe(shape));
    std::vector<int32_t> inputs(N, 0), targets(N, kIgnoredTarget);
    Rng rng(31);
    int counted = 0;
    for (int b = 0; b < B; b++)
      for (int t = 0; t < prompt[b] + completion[b]; t++) {
        inputs[size_t(b * T + t)] = int32_t(rng.below(uint64_t(shape.vocab_size)));
        if (t >= prompt[b] - 1 && t < prompt[b] + completion[b] - 1) {
          targets[size_t(b * T + t)] = int32_t(rng.below(uint64_t(shape.vocab_size)));
          counted++;
        }
      }
    const float row_weights[] = {0.31f, -0.42f, 0.17f, -0.05f};
    std::vector<float> weights(N);
    for (int i = 0; i < N; i++)
      weights[size_t(i)] =
          targets[size_t(i)] == kIgnoredTarget ? 1e30f : row_weights[i / T] * (1.0f + 0.1f * float(i % T));
    const Result full = run(shape, B, T, N, inputs, targets, false, &weights);
    for (int rows : {N, 5}) {
      INFO(rows << " rows per chunk");
      const Result completions = run(shape, B, T, rows, inputs, targets, true, &weights);
      CHECK(completions.head_rows == counted);
      check_same_losses(completions.losses, full.losses, rows == N ? 0.0 : 1e-6);
      CHECK(norm_relative(completions.grads, full.grads) <= 1e-6);
    }
  }
}

TEST_CASE("target weights: 1 / (the targets that count) give the mean loss's gradients, each target its own",
          "[model][head][preference]") {
  const int B = 2, T = 12, N = B * T;
  for (const GptShape& shape : head_shapes()) {
    INFO(describe(shape));
    std::vector<int32_t> inputs(N), targets(N);
    Rng rng(37);
    int counted = 0;
    for (int i = 0; i < N; i++) {
      inputs[size_t(i)] = int32_t(rng.below(uint64_t(shape.vocab_size)));
      const bool ignored = i % T < 4 || i % 5 == 0;
      targets[size_t(i)] = ignored ? kIgnoredTarget : int32_t(rng.below(uint64_t(shape.vocab_size)));
      counted += !ignored;
    }
    const std::vector<float> weights(N, 1.0f / float(counted));
    const Result mean = run(shape, B, T, N, inputs, targets);
    for (int rows : {N, 5}) {
      INFO(rows << " rows per chunk");
      CHECK(norm_relative(run(shape, B, T, rows, inputs, targets, true, &weights).grads, mean.grads) <= 1e-6);
    }
    // Twice the weights, twice the gradients: the weights are read, not a count of 1.
    const std::vector<float> doubled(N, 2.0f / float(counted));
    std::vector<float> twice = mean.grads;
    for (float& g : twice) g *= 2.0f;
    CHECK(norm_relative(run(shape, B, T, 5, inputs, targets, true, &doubled).grads, twice) <= 1e-6);
    // Each target its own weight, two in one row: Σ_k w_k · (the gradient of target k's loss alone).
    const int picked[] = {6, 9, 17};
    const float picked_weight[] = {0.5f, -0.3f, 0.8f};
    std::vector<float> sparse(N, 0.0f), want(mean.grads.size(), 0.0f);
    for (int k = 0; k < 3; k++) {
      REQUIRE(targets[size_t(picked[k])] != kIgnoredTarget);
      sparse[size_t(picked[k])] = picked_weight[k];
      std::vector<int32_t> alone(N, kIgnoredTarget);
      alone[size_t(picked[k])] = targets[size_t(picked[k])];
      const Result one = run(shape, B, T, N, inputs, alone);  // the mean over one target: its loss
      for (size_t i = 0; i < want.size(); i++) want[i] += picked_weight[k] * one.grads[i];
    }
    CHECK(norm_relative(run(shape, B, T, 5, inputs, targets, true, &sparse).grads, want) <= 1e-5);
  }
}

TEST_CASE("the logits kept by a head on the rows that count are found by their row of the batch",
          "[model][head][mask]") {
  const GptShape shape = *gpt_preset("toy");
  const int B = 1, T = 10;
  std::vector<int32_t> inputs(static_cast<size_t>(T)), targets(static_cast<size_t>(T), kIgnoredTarget);
  for (int t = 0; t < T; t++) inputs[size_t(t)] = int32_t(3 * t + 1);
  for (int t : {2, 4, 5, 8}) targets[size_t(t)] = int32_t(t);
  Gpt full(shape, B, T);
  Gpt counted(shape, B, T, false, cpu_backend(), TrainedParts{}, 3 * size_t(shape.padded_vocab()) * sizeof(float));
  ResidentParams params(full.layout());
  full.init_params(params.params.data(), 0, full.layout().total, 3);
  full.forward(inputs.data(), nullptr, B, T, params);  // every row's logits
  counted.forward(inputs.data(), targets.data(), B, T, params);
  REQUIRE(counted.head_rows() == 4);
  REQUIRE(counted.first_logit_row() == 1);  // chunks of the counted rows [0, 1), [1, 4): rows 4, 5, 8 kept
  std::vector<float> want(size_t(shape.vocab_size)), got(want.size());
  for (int row : {4, 5, 8}) {
    full.copy_logits_row(row, want.data());
    counted.copy_logits_row(row, got.data());
    CHECK(got == want);
  }
  REQUIRE_THROWS_WITH(counted.copy_logits_row(2, got.data()), Catch::Contains("row 2 is not among the logits kept"));
  REQUIRE_THROWS_WITH(counted.copy_logits_row(3, got.data()), Catch::Contains("row 3 is not among the logits kept"));
}
