#include "model/gpt.hpp"

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace zt {

namespace {

int checked_bound(const GptShape& shape, int max_batch, int max_seq) {
  validate_gpt_shape(shape);
  if (max_batch <= 0) fail("micro-batch size must be positive, got {}", max_batch);
  if (max_seq <= 0) fail("data.seq_len must be positive, got {}", max_seq);
  if (max_seq > shape.max_seq_len)
    fail("data.seq_len ({}) exceeds model.max_seq_len ({})", max_seq, shape.max_seq_len);
  return max_batch;
}

void check_tokens(const char* what, const int32_t* tokens, size_t n, int vocab_size) {
  for (size_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= vocab_size)
      fail("Gpt::forward: {}[{}] = {} is outside the vocabulary [0, {})", what, i, tokens[i], vocab_size);
}

}  // namespace

Gpt::Gpt(const GptShape& shape, int max_batch, int max_seq, bool recompute, const Backend& backend)
    : shape_(shape),
      device_(backend.device),
      ops_(backend.model),
      max_batch_(checked_bound(shape, max_batch, max_seq)),
      max_seq_(max_seq),
      recompute_(recompute),
      layout_(make_gpt_layout(shape)),
      block_(gpt_block_offsets(shape.d_model)),
      wpe_offset_(size_t(shape.padded_vocab()) * shape.d_model),
      acts_(shape, max_batch, max_seq, recompute ? 1 : shape.n_layer, backend) {}

size_t Gpt::flops_per_token() const {
  return 6 * num_params() + 12 * size_t(shape_.n_layer) * size_t(shape_.d_model) * size_t(max_seq_);
}

std::vector<int> Gpt::fetch_order() const {
  const int L = shape_.n_layer, lnf = gpt_ln_f_group(shape_);
  std::vector<int> order{kEmbeddingsGroup};
  for (int l = 0; l < L; ++l) order.push_back(gpt_block_group(l));
  order.push_back(lnf);
  order.push_back(kEmbeddingsGroup);  // LM head
  order.push_back(kEmbeddingsGroup);  // its backward
  order.push_back(lnf);
  for (int l = L - 1; l >= 0; --l) order.push_back(gpt_block_group(l));
  return order;
}

const void* Gpt::fetch(ParamHooks& hooks, int g) {
  ConstView v = hooks.fetch(g);
  if (v.dtype != ops_.dtype())
    fail("Gpt: parameters of group {} come as {}, the model computes in {}", layout_.groups[size_t(g)].name,
         dtype_name(v.dtype), dtype_name(ops_.dtype()));
  return v.data;
}

void* Gpt::grads(ParamHooks& hooks, int g) {
  View v = hooks.grads(g);
  if (v.dtype != ops_.dtype())
    fail("Gpt: gradients of group {} are taken as {}, the model computes in {}", layout_.groups[size_t(g)].name,
         dtype_name(v.dtype), dtype_name(ops_.dtype()));
  return v.data;
}

void Gpt::block_forward(int layer, const void* params, const BlockActivations& a, int B, int T, bool write_output) {
  using enum BlockTensor;
  const size_t esz = dtype_size(ops_.dtype());
  auto w = [&](BlockTensor t) { return static_cast<const char*>(params) + block_[int(t)] * esz; };
  const int C = shape_.d_model, NH = shape_.n_head, N = B * T;
  const void* input = acts_.residual(layer);
  void* proj = acts_.proj.data();

  ops_.layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, input, w(Ln1Weight), w(Ln1Bias), N, C);
  ops_.matmul_forward(a.qkv, a.ln1, w(AttnWeight), w(AttnBias), N, C, 3 * C, WeightLayout::InputMajor);
  ops_.attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
  ops_.matmul_forward(proj, a.atty, w(AttnProjWeight), w(AttnProjBias), N, C, C, WeightLayout::InputMajor);
  ops_.residual_layernorm_forward(a.residual2, a.ln2, a.ln2_mean, a.ln2_rstd, input, proj, w(Ln2Weight), w(Ln2Bias),
                                  N, C);
  ops_.matmul_gelu_forward(a.fch, a.fch_gelu, a.ln2, w(FcWeight), w(FcBias), N, C, 4 * C, WeightLayout::InputMajor);
  if (!write_output) return;  // recomputation for backward needs nothing past the GELU
  ops_.matmul_forward(proj, a.fch_gelu, w(FcProjWeight), w(FcProjBias), N, 4 * C, C, WeightLayout::InputMajor);
  ops_.residual_forward(acts_.residual(layer + 1), a.residual2, proj, size_t(N) * C);
}

float Gpt::forward(const int32_t* inputs, const int32_t* targets, int B, int T, ParamHooks& hooks) {
  if (B <= 0 || B > max_batch_)
    fail("Gpt::forward: micro-batch size B={} is outside [1, {}] (the size the model was built for)", B, max_batch_);
  if (T <= 0 || T > max_seq_)
    fail("Gpt::forward: sequence length T={} is outside [1, {}] (data.seq_len the model was built for)", T, max_seq_);
  const int C = shape_.d_model, V = shape_.vocab_size, Vp = padded_vocab(), L = shape_.n_layer, N = B * T;
  const size_t esz = dtype_size(ops_.dtype());
  check_tokens("inputs", inputs, size_t(N), V);
  if (targets) check_tokens("targets", targets, size_t(N), V);
  backward_ready_ = false;
  device_.copy(acts_.inputs.data(), inputs, sizeof(int32_t) * N, device_.compute());
  if (targets) device_.copy(acts_.targets.data(), targets, sizeof(int32_t) * N, device_.compute());

  auto emb = static_cast<const char*>(fetch(hooks, kEmbeddingsGroup));
  ops_.embedding_forward(acts_.residual(0), acts_.inputs.data(), emb, emb + wpe_offset_ * esz, B, T, C);
  hooks.release(kEmbeddingsGroup);

  for (int l = 0; l < L; l++) {
    const void* p = fetch(hooks, gpt_block_group(l));
    block_forward(l, p, acts_.block(recompute_ ? 0 : l), B, T, true);
    hooks.release(gpt_block_group(l));
  }

  const int lnf_group = gpt_ln_f_group(shape_);
  auto lnf = static_cast<const char*>(fetch(hooks, lnf_group));
  ops_.layernorm_forward(acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), acts_.residual(L), lnf,
                         lnf + C * esz, N, C);
  hooks.release(lnf_group);

  emb = static_cast<const char*>(fetch(hooks, kEmbeddingsGroup));  // LM head: logits = lnf · wteᵀ
  ops_.matmul_forward(acts_.logits.data(), acts_.lnf.data(), emb, nullptr, N, C, Vp, WeightLayout::OutputMajor);
  hooks.release(kEmbeddingsGroup);

  last_B_ = B;
  last_T_ = T;
  if (!targets) return std::numeric_limits<float>::quiet_NaN();
  backward_ready_ = true;
  return ops_.cross_entropy_forward(acts_.lse.data(), acts_.logits.data(), acts_.targets.data(), N, V, Vp);
}

void Gpt::block_backward(int layer, const void* params, void* grads, const BlockActivations& a, int B, int T) {
  using enum BlockTensor;
  const size_t esz = dtype_size(ops_.dtype());
  auto w = [&](BlockTensor t) { return static_cast<const char*>(params) + block_[int(t)] * esz; };
  auto dw = [&](BlockTensor t) { return static_cast<char*>(grads) + block_[int(t)] * esz; };
  const int C = shape_.d_model, NH = shape_.n_head, N = B * T;
  void* dres = acts_.dresidual.data();  // holds d(block output) on entry, d(block input) on exit
  constexpr auto IM = WeightLayout::InputMajor;
  // Each intermediate gradient has one writer, which writes over it; the residual stream's gradient
  // dres passes through each branch unchanged and the branch's LayerNorm adds its own onto it.
  constexpr auto Set = GradInto::Overwrite, Add = GradInto::Accumulate;

  // MLP branch: residual3 = residual2 + c_proj(gelu(c_fc(ln_2(residual2))))
  ops_.matmul_gelu_backward(acts_.dfch.data(), acts_.dfch_gelu.data(), dw(FcProjWeight), dw(FcProjBias), dres,
                            a.fch_gelu, a.fch, w(FcProjWeight), N, 4 * C, C, IM, Set);
  ops_.matmul_backward(acts_.dln.data(), dw(FcWeight), dw(FcBias), acts_.dfch.data(), a.ln2, w(FcWeight), N, C,
                       4 * C, IM, Set);
  ops_.layernorm_backward(dres, dw(Ln2Weight), dw(Ln2Bias), acts_.dln.data(), a.residual2, w(Ln2Weight), a.ln2_mean,
                          a.ln2_rstd, N, C, Add);

  // Attention branch: residual2 = input + c_proj(attention(c_attn(ln_1(input))))
  ops_.matmul_backward(acts_.datty.data(), dw(AttnProjWeight), dw(AttnProjBias), dres, a.atty, w(AttnProjWeight), N,
                       C, C, IM, Set);
  ops_.attention_backward(acts_.dqkv.data(), acts_.datt.data(), acts_.datty.data(), a.qkv, a.atty, a.att, B, T, C,
                          NH, Set);
  ops_.matmul_backward(acts_.dln.data(), dw(AttnWeight), dw(AttnBias), acts_.dqkv.data(), a.ln1, w(AttnWeight), N, C,
                       3 * C, IM, Set);
  ops_.layernorm_backward(dres, dw(Ln1Weight), dw(Ln1Bias), acts_.dln.data(), acts_.residual(layer), w(Ln1Weight),
                          a.ln1_mean, a.ln1_rstd, N, C, Add);
}

void Gpt::backward(ParamHooks& hooks, float dloss) {
  if (!backward_ready_)
    fail("Gpt::backward: needs a forward with targets first (and runs once per forward)");
  backward_ready_ = false;
  const int B = last_B_, T = last_T_, N = B * T;
  const int C = shape_.d_model, V = shape_.vocab_size, Vp = padded_vocab(), L = shape_.n_layer;
  const size_t esz = dtype_size(ops_.dtype());
  void* dlogits = acts_.logits.data();  // in place over the logits
  ops_.cross_entropy_backward(dlogits, acts_.logits.data(), acts_.lse.data(), acts_.targets.data(), dloss / float(N),
                              N, V, Vp);

  // LM head. The embeddings' gradient buffer stays open until the lookup's gradient is added last.
  const void* emb = fetch(hooks, kEmbeddingsGroup);
  auto demb = static_cast<char*>(grads(hooks, kEmbeddingsGroup));
  ops_.matmul_backward(acts_.dln.data(), demb, nullptr, dlogits, acts_.lnf.data(), emb, N, C, Vp,
                       WeightLayout::OutputMajor, GradInto::Overwrite);
  hooks.release(kEmbeddingsGroup);

  const int lnf_group = gpt_ln_f_group(shape_);
  auto lnf = static_cast<const char*>(fetch(hooks, lnf_group));
  auto dlnf = static_cast<char*>(grads(hooks, lnf_group));
  ops_.layernorm_backward(acts_.dresidual.data(), dlnf, dlnf + C * esz, acts_.dln.data(), acts_.residual(L), lnf,
                          acts_.lnf_mean.data(), acts_.lnf_rstd.data(), N, C, GradInto::Overwrite);
  hooks.grads_ready(lnf_group);
  hooks.release(lnf_group);

  for (int l = L - 1; l >= 0; l--) {
    const int g = gpt_block_group(l);
    const void* p = fetch(hooks, g);
    const BlockActivations a = acts_.block(recompute_ ? 0 : l);
    if (recompute_) block_forward(l, p, a, B, T, false);
    block_backward(l, p, grads(hooks, g), a, B, T);
    hooks.grads_ready(g);
    hooks.release(g);
  }

  // The lookup needs no parameter values, only the token ids.
  ops_.embedding_backward(demb, demb + wpe_offset_ * esz, acts_.dresidual.data(), acts_.inputs.data(), B, T, C);
  hooks.grads_ready(kEmbeddingsGroup);
}

}  // namespace zt
