#include "model/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/ignored_target.hpp"
#include "model/rope_frequencies.hpp"

namespace zt {

namespace {

// Where role r starts in a block's flat buffer of elements of esz bytes: null where the block has
// no such tensor, or where there is no buffer (a frozen block's gradients).
template <class Byte>
Byte* role_in(Byte* block, const RoleOffsets& roles, BlockRole r, size_t esz) {
  const size_t o = roles[size_t(r)];
  return o == kAbsent || !block ? nullptr : block + o * esz;
}

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

// Checks targets as tokens that may also be kIgnoredTarget; the rows of those that count into
// `rows`, in order.
void counted_targets_of(const int32_t* targets, size_t n, int vocab_size, std::vector<int32_t>& rows) {
  rows.clear();
  for (size_t i = 0; i < n; i++) {
    if (targets[i] == kIgnoredTarget) continue;
    if (targets[i] < 0 || targets[i] >= vocab_size)
      fail("Gpt::forward: targets[{}] = {} is outside the vocabulary [0, {}) (and not {}, a target that carries "
           "no loss)",
           i, targets[i], vocab_size, kIgnoredTarget);
    rows.push_back(int32_t(i));
  }
}

// The vectors the q/k norms normalise in a row of the packed qkv: each head (q heads, k heads,
// width hd), or (qk_norm_whole) the whole q and the whole k as one vector each, which with as many
// key/value heads as heads (gpt_shape.cpp refuses fewer) is the same layout of three vectors.
struct QkNormVectors {
  int q, k, width;
};
QkNormVectors qk_norm_vectors(const GptShape& s) {
  if (s.recipe().qk_norm_whole) return {1, 1, s.q_width()};
  return {s.n_head, s.kv_heads(), s.head_size()};
}

// `x` rounded to the compute dtype, as torch rounds a scalar tensor made in the hidden states' dtype.
float in_dtype(DType dtype, float x) {
  float out = 0.0f;
  std::vector<uint8_t> bytes(dtype_size(dtype));
  from_f32(dtype, &x, bytes.data(), 1);
  to_f32(dtype, bytes.data(), &out, 1);
  return out;
}

// The lowest block whose parameters or adapters train (0 when the embeddings do): backward stops
// there. n_layer when no block trains.
int lowest_trained_block(const ParamLayout& layout, const GptShape& shape, bool adapters) {
  if (layout.group_trainable(size_t(kEmbeddingsGroup))) return 0;
  for (int l = 0; l < shape.n_layer; ++l)
    if (layout.group_trainable(size_t(gpt_block_group(l))) ||
        (adapters && layout.group_trainable(size_t(lora_group(shape, l)))))
      return l;
  return shape.n_layer;
}

// Whether some router is kept in fp32 (TensorSpec::keep_fp32). A model computing in a 16-bit dtype
// reads only routers in fp32 (ParamHooks::fetch_fp32); one computing in fp32 reads every kept
// tensor in its fp32 copy of the group.
bool keeps_fp32_routers(const ParamLayout& layout, const GptShape& shape, DType dtype, bool experts_apart) {
  bool routers = false;
  for (size_t g = 0; g < layout.groups.size(); ++g)
    for (const TensorSpec& t : layout.groups[g].tensors) {
      if (!t.keep_fp32) continue;
      const int layer = int(g) - gpt_block_group(0);
      const bool router =
          layer >= 0 && layer < shape.n_layer && shape.sparse(layer) &&
          t.offset == layout.groups[g].offset +
                          block_role_offsets(shape, layer, experts_apart)[size_t(BlockRole::RouterWeight)];
      if (!router && dtype != DType::F32)
        fail(
            "data_types.keep_in_fp32_modules: {} is kept in fp32, and the model computes in {} on this device, "
            "where only the routers of a mixture of experts are read in fp32; leave it out of the list, or train on "
            "the CPU (training.device cpu)",
            t.name, dtype_name(dtype));
      routers = routers || router;
    }
  return routers;
}

std::vector<RoleOffsets> layer_offsets(const GptShape& shape, bool experts_apart) {
  std::vector<RoleOffsets> offsets;
  for (int l = 0; l < shape.n_layer; ++l) offsets.push_back(block_role_offsets(shape, l, experts_apart));
  return offsets;
}

}  // namespace

Gpt::Gpt(const GptShape& shape, int max_batch, int max_seq, bool recompute, const Backend& backend,
         const TrainedParts& parts, size_t logits_bytes, int head_rows, ExpertPlace experts)
    : shape_(shape),
      device_(backend.device),
      ops_(backend.model),
      max_batch_(checked_bound(shape, max_batch, max_seq)),
      max_seq_(max_seq),
      recompute_(recompute),
      place_(experts),
      whole_layout_(make_training_layout(shape, parts)),
      layout_(expert_parallel_layout(shape, whole_layout_, experts)),
      recipe_(shape.recipe()),
      blocks_(layer_offsets(shape, layout_.groups.size() != whole_layout_.groups.size())),
      lora_(shape, parts.lora, max_batch, max_seq, recompute ? 1 : shape.n_layer, backend),
      lowest_trained_block_(lowest_trained_block(whole_layout_, shape, lora_.enabled())),
      weights_(recipe_.output_major ? WeightLayout::OutputMajor : WeightLayout::InputMajor),
      norm_offset_(recipe_.gemma ? 1.0f : 0.0f),
      gate_(recipe_.gemma ? Gate::GeluTanh : Gate::Silu),
      scores_{shape.query_pre_attn_scalar > 0 ? float(std::pow(shape.query_pre_attn_scalar, -0.5)) : 0.0f,
              float(shape.attn_logit_softcapping)},
      embed_scale_(recipe_.gemma ? in_dtype(backend.model.dtype(), float(std::sqrt(double(shape.d_model)))) : 1.0f),
      final_softcap_(float(shape.final_logit_softcapping)),
      wpe_offset_(size_t(shape.padded_vocab()) * shape.d_model),
      acts_(shape, max_batch, max_seq, recompute ? 1 : shape.n_layer, backend, logits_bytes, head_rows),
      moe_(shape, max_batch, max_seq, recompute ? 1 : shape.n_layer, backend,
           keeps_fp32_routers(layout_, shape, backend.model.dtype(),
                              layout_.groups.size() != whole_layout_.groups.size())) {
  if (recipe_.rotary) fill_rope_tables();
  for (int l = 0; l < shape.n_layer; ++l) expert_groups_.push_back(expert_group_of(shape, layout_, l));
  if (layout_.groups.size() != whole_layout_.groups.size())
    map_ = std::make_shared<const LayoutMap>(layout_, whole_layout_);
}

void Gpt::set_expert_group(ExpertGroup group) {
  if (group.size != place_.size || group.index != place_.index)
    fail("Gpt: an expert group of {} ranks at place {}, and the layout holds place {} of {}", group.size, group.index,
         place_.index, place_.size);
  moe_.set_group(std::move(group));
}

void Gpt::fill_rope_tables() {
  fill_rope_table(shape_, acts_.rope_cos, acts_.rope_sin);
  if (acts_.rope_local_cos.empty()) return;
  GptShape local = shape_;  // gemma3_text's sliding layers: their own base, no scaling
  local.rope_theta = shape_.rope_local_base_freq;
  local.rope_scaling = {};
  fill_rope_table(local, acts_.rope_local_cos, acts_.rope_local_sin);
}

const float* Gpt::rope_cos(int layer) const {
  const bool local = !acts_.rope_local_cos.empty() && shape_.layer_window(layer) > 0;
  return (local ? acts_.rope_local_cos : acts_.rope_cos).data();
}

const float* Gpt::rope_sin(int layer) const {
  const bool local = !acts_.rope_local_sin.empty() && shape_.layer_window(layer) > 0;
  return (local ? acts_.rope_local_sin : acts_.rope_sin).data();
}

void Gpt::fill_rope_table(const GptShape& shape, Buffer<float>& cos_table, Buffer<float>& sin_table) {
  const int half = shape.head_size() / 2;
  const std::vector<float> inv_freq = rope_inverse_frequencies(shape);
  std::vector<float> cos(size_t(max_seq_) * half), sin(cos.size());
  for (int t = 0; t < max_seq_; t++)
    for (int i = 0; i < half; i++) {
      // As transformers: the angle is an fp32 product, its cosine and sine rounded to fp32.
      const float angle = float(t) * inv_freq[size_t(i)];
      cos[size_t(t) * half + i] = float(std::cos(double(angle)));
      sin[size_t(t) * half + i] = float(std::sin(double(angle)));
    }
  device_.copy(cos_table.data(), cos.data(), cos.size() * sizeof(float), device_.compute());
  device_.copy(sin_table.data(), sin.data(), sin.size() * sizeof(float), device_.compute());
  device_.synchronize(device_.compute());  // the host tables go out of scope
}

Gpt::PairFlops Gpt::flops_per_pair() const {
  PairFlops pair;
  for (int l = 0; l < shape_.n_layer; ++l) {
    // attention 4 in forward and 8 in backward, where backward reaches
    const size_t flops = size_t(l >= lowest_trained_block_ ? 12 : 4) * size_t(shape_.q_width());
    (shape_.layer_window(l) > 0 ? pair.sliding : pair.full) += flops;
  }
  return pair;
}

size_t Gpt::flops_per_token(int keys) const {
  const PairFlops pair = flops_per_pair();
  const int window = shape_.sliding_window;
  const size_t attention = pair.full * size_t(keys) + pair.sliding * size_t(window > 0 ? std::min(keys, window) : keys);
  const size_t C = size_t(shape_.d_model);
  if (!whole_layout_.has_frozen()) {
    const size_t lookup = shape_.tied_head ? 0 : size_t(shape_.vocab_size) * C;
    return 6 * (shape_.active_params() - lookup) + attention;
  }
  // Each parameter: 2 in forward, 2 for its input's gradient where backward reaches (from the LM
  // head down to the lowest block that trains), 2 for its own gradient when it trains. The
  // embedding lookup multiplies nothing (tied, it is the head).
  auto block_of = [&](size_t g) {
    for (int l = 0; l < shape_.n_layer; ++l)
      if (g == size_t(gpt_block_group(l)) || (lora_.enabled() && g == size_t(lora_group(shape_, l)))) return l;
    return shape_.n_layer;  // the final norm and the head
  };
  size_t flops = attention;
  for (size_t g = 0; g < whole_layout_.groups.size(); ++g)
    for (const TensorSpec& t : whole_layout_.groups[g].tensors) {
      if (g == size_t(kEmbeddingsGroup) && (!shape_.tied_head || t.name == "wpe.weight")) continue;
      size_t n = has_vocabulary_rows(t.name) ? size_t(shape_.vocab_size) * C : t.numel();
      if (t.name.find(".experts.") != std::string::npos)  // a token passes through top_k of them
        n = n * size_t(shape_.moe.top_k) / size_t(shape_.moe.num_experts);
      const bool backward = g == size_t(kEmbeddingsGroup) || block_of(g) >= lowest_trained_block_;
      flops += n * (2 + (backward ? 2 : 0) + (t.trainable ? 2 : 0));
    }
  return flops;
}

size_t Gpt::head_flops_per_row() const {
  const size_t VC = size_t(shape_.vocab_size) * size_t(shape_.d_model);
  if (!whole_layout_.has_frozen()) return 6 * VC;
  // The head is the token embedding when tied, else its own matrix; backward always reaches it.
  for (size_t g = 0; g < whole_layout_.groups.size(); ++g)
    for (const TensorSpec& t : whole_layout_.groups[g].tensors)
      if (has_vocabulary_rows(t.name) && (g == size_t(kEmbeddingsGroup)) == shape_.tied_head)
        return VC * (4 + (t.trainable ? 2 : 0));
  return 0;
}

std::vector<int> Gpt::fetch_order() const {
  const int L = shape_.n_layer, lnf = gpt_ln_f_group(shape_), head = gpt_head_group(shape_);
  std::vector<int> order{kEmbeddingsGroup};
  auto block = [&](int l) {
    order.push_back(gpt_block_group(l));
    if (lora_.enabled()) order.push_back(lora_group(shape_, l));
    if (expert_groups_[size_t(l)] >= 0) order.push_back(expert_groups_[size_t(l)]);
  };
  for (int l = 0; l < L; ++l) block(l);
  order.push_back(lnf);
  order.push_back(head);  // LM head
  order.push_back(head);  // its backward
  order.push_back(lnf);
  for (int l = L - 1; l >= lowest_trained_block_; --l) block(l);
  // The embedding lookup's backward needs no parameter values: nothing more is fetched.
  return order;
}

Gpt::BlockParams Gpt::fetch_block(ParamHooks& hooks, int layer) {
  const void* params = fetch(hooks, gpt_block_group(layer));
  const void* adapters = lora_.enabled() ? fetch(hooks, lora_group(shape_, layer)) : nullptr;
  const int experts = expert_groups_[size_t(layer)];
  return {params, adapters, experts >= 0 ? fetch(hooks, experts) : nullptr,
          static_cast<const float*>(hooks.fetch_fp32(gpt_block_group(layer)).data)};
}

void Gpt::release_block(ParamHooks& hooks, int layer) {
  if (expert_groups_[size_t(layer)] >= 0) hooks.release(expert_groups_[size_t(layer)]);
  if (lora_.enabled()) hooks.release(lora_group(shape_, layer));
  hooks.release(gpt_block_group(layer));
}

void* Gpt::grads_if_trained(ParamHooks& hooks, int g) {
  return layout_.group_trainable(size_t(g)) ? grads(hooks, g) : nullptr;
}

void Gpt::grads_ready_if_trained(ParamHooks& hooks, int g) {
  if (layout_.group_trainable(size_t(g))) hooks.grads_ready(g);
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

void Gpt::norm_forward(void* out, float* mean, float* rstd, const void* inp, const char* weight, const char* bias,
                       int N) {
  if (recipe_.rms_norm)
    ops_.rmsnorm_forward(out, rstd, inp, weight, N, shape_.d_model, float(shape_.norm_eps), norm_offset_);
  else
    ops_.layernorm_forward(out, mean, rstd, inp, weight, bias, N, shape_.d_model);
}

void Gpt::norm_backward(void* dinp, char* dweight, char* dbias, const void* dout, const void* inp,
                        const char* weight, const float* mean, const float* rstd, int N, GradInto dinp_into) {
  if (recipe_.rms_norm)
    ops_.rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, shape_.d_model, dinp_into, norm_offset_);
  else
    ops_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, shape_.d_model, dinp_into);
}

void Gpt::block_forward(int layer, BlockParams bp, const BlockActivations& a, int B, int T, bool write_output,
                        KvCache* cache) {
  using enum BlockRole;
  const size_t esz = dtype_size(ops_.dtype());
  const RoleOffsets& roles = blocks_[size_t(layer)];
  auto w = [&](BlockRole r) { return role_in(static_cast<const char*>(bp.params), roles, r, esz); };
  const int C = shape_.d_model, NH = shape_.n_head, NKV = shape_.kv_heads(), hd = shape_.head_size();
  const int QKV = shape_.qkv_width(), Q = shape_.q_width(), F = shape_.ff_width(), N = B * T;
  const int fc = recipe_.swiglu ? 2 * F : F;
  const void* input = acts_.residual(layer);
  void* proj = acts_.proj.data();
  // The LoRA adapters of a projection add their update to its output (input x).
  auto adapted = [&](BlockRole r) { return bp.adapters && lora_.adapts(r); };
  auto adapt = [&](BlockRole r, void* out, const void* x) {
    if (adapted(r)) lora_.forward(r, layer, recompute_ ? 0 : layer, out, x, bp.adapters, N);
  };

  norm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, input, w(Norm1Weight), w(Norm1Bias), N);
  ops_.matmul_forward(a.qkv, a.ln1, w(QkvWeight), w(QkvBias), N, C, QKV, weights_);
  adapt(QkvWeight, a.qkv, a.ln1);
  const int pos = cache ? cache->length() : 0;  // of the first of the T tokens
  if (recipe_.rotary) {
    // Norms and rotation in place on what attention reads: one pass over q and k each, O(T·hd)
    // against attention's O(T²·hd), so the CPU keeps them as passes of their own.
    if (recipe_.qk_norm) {
      const QkNormVectors v = qk_norm_vectors(shape_);
      ops_.qk_norm_forward(a.qkv_att, a.qk_rstd, a.qkv, w(QNormWeight), w(KNormWeight), N, v.q, v.k, v.width,
                           float(shape_.norm_eps), norm_offset_);
    }
    const size_t first_row = size_t(pos) * size_t(hd / 2);  // the tables' row of position pos
    ops_.rope_forward(a.qkv_att, rope_cos(layer) + first_row, rope_sin(layer) + first_row, segments_, B, T, NH, NKV,
                      hd);
    const int window = shape_.layer_window(layer);
    if (cache)
      ops_.attention_cached_forward(a.atty, cache->keys(layer), cache->values(layer), a.qkv_att, B, T, pos,
                                    cache->rows(layer), NH, NKV, hd, window, scores_);
    else
      ops_.gqa_attention_forward(a.atty, a.att, acts_.datt.data(), a.qkv_att, segments_, B, T, NH, NKV, hd, window,
                                 scores_);
  } else if (cache) {
    ops_.attention_cached_forward(a.atty, cache->keys(layer), cache->values(layer), a.qkv, B, T, pos,
                                  cache->rows(layer), NH, NH, C / NH, 0);
  } else {
    ops_.attention_forward(a.atty, a.att, acts_.datt.data(), a.qkv, segments_, B, T, C, NH);
  }
  // Gemma norms each branch's output before the residual add (its input kept for backward).
  auto post_norm = [&](void* out, BlockRole r, float* rstd) {
    if (recipe_.gemma) ops_.rmsnorm_forward(proj, rstd, out, w(r), N, C, float(shape_.norm_eps), norm_offset_);
  };
  void* attn_out = recipe_.gemma ? a.attn_out : proj;
  ops_.matmul_forward(attn_out, a.atty, w(OutWeight), w(OutBias), N, Q, C, weights_);
  adapt(OutWeight, attn_out, a.atty);
  post_norm(attn_out, PostAttnNormWeight, a.attn_rstd);
  if (recipe_.rms_norm) {
    ops_.residual_rmsnorm_forward(a.residual2, a.ln2, a.ln2_rstd, input, proj, w(Norm2Weight), N, C,
                                  float(shape_.norm_eps), norm_offset_);
  } else {
    ops_.residual_layernorm_forward(a.residual2, a.ln2, a.ln2_mean, a.ln2_rstd, input, proj, w(Norm2Weight),
                                    w(Norm2Bias), N, C);
  }
  if (shape_.sparse(layer)) {
    // The experts' output goes straight to proj: recomputation for backward needs their saved
    // products too.
    moe_.forward(layer, recompute_ ? 0 : layer, proj, a.ln2,
                 {bp.router ? static_cast<const void*>(bp.router) : w(RouterWeight),
                  bp.experts ? bp.experts : w(ExpertWeights), w(SharedExpertWeights), w(SharedGateWeight),
                  bp.router != nullptr},
                 N);
    if (write_output) ops_.residual_forward(acts_.residual(layer + 1), a.residual2, proj, size_t(N) * C);
    return;
  }
  if (recipe_.swiglu) {
    ops_.matmul_forward(a.fch, a.ln2, w(FcWeight), w(FcBias), N, C, fc, weights_);
    adapt(FcWeight, a.fch, a.ln2);
    ops_.swiglu_forward(a.fch_gelu, a.fch, N, F, gate_);
  } else if (adapted(FcWeight)) {  // the adapter's update goes in before the GELU
    ops_.matmul_forward(a.fch, a.ln2, w(FcWeight), w(FcBias), N, C, fc, weights_);
    adapt(FcWeight, a.fch, a.ln2);
    ops_.gelu_forward(a.fch_gelu, a.fch, size_t(N) * size_t(F));
  } else {
    ops_.matmul_gelu_forward(a.fch, a.fch_gelu, a.ln2, w(FcWeight), w(FcBias), N, C, fc, weights_);
  }
  // Recomputation for backward needs nothing past the activation, but Gemma's MLP output norm.
  if (!write_output && !recipe_.gemma) return;
  void* mlp_out = recipe_.gemma ? a.mlp_out : proj;
  ops_.matmul_forward(mlp_out, a.fch_gelu, w(FcProjWeight), w(FcProjBias), N, F, C, weights_);
  adapt(FcProjWeight, mlp_out, a.fch_gelu);
  post_norm(mlp_out, PostFfNormWeight, a.mlp_rstd);
  if (write_output) ops_.residual_forward(acts_.residual(layer + 1), a.residual2, proj, size_t(N) * C);
}

float Gpt::forward(const int32_t* inputs, const int32_t* targets, int B, int T, ParamHooks& hooks,
                   const RowSegments* segments) {
  if (B <= 0 || B > max_batch_)
    fail("Gpt::forward: micro-batch size B={} is outside [1, {}] (the size the model was built for)", B, max_batch_);
  if (T <= 0 || T > max_seq_)
    fail("Gpt::forward: sequence length T={} is outside [1, {}] (data.seq_len the model was built for)", T, max_seq_);
  const int V = shape_.vocab_size, N = B * T;
  check_tokens("inputs", inputs, size_t(N), V);
  if (targets) counted_targets_of(targets, size_t(N), V, counted_rows_);
  last_counted_ = targets ? int(counted_rows_.size()) : 0;
  // Only the rows whose target counts reach the head, when some do and some do not.
  compact_head_ = head_on_counted_rows_ && targets && last_counted_ > 0 && last_counted_ < N;
  head_rows_ = compact_head_ ? last_counted_ : N;
  backward_ready_ = false;
  segments_ = copy_segments(segments, B, T);
  moe_.set_rows(segments, B, T);
  if (targets) device_.copy(acts_.targets.data(), targets, sizeof(int32_t) * N, device_.compute());
  logits_forward(inputs, targets ? acts_.targets.data() : nullptr, B, T, hooks, nullptr);
  if (!targets) return std::numeric_limits<float>::quiet_NaN();
  moe_.end_forward();
  backward_ready_ = true;
  return ops_.cross_entropy_loss(acts_.counted.data(), acts_.losses.data(), head_targets(), head_rows_);
}

void Gpt::forward_cached(const int32_t* inputs, int B, int T, KvCache& cache, ParamHooks& hooks) {
  if (B != cache.batch() || B > max_batch_)
    fail("Gpt::forward_cached: batch B={} differs from the cache's {} or exceeds the model's {}", B, cache.batch(),
         max_batch_);
  const int end = cache.length() + T;
  if (T <= 0 || T > max_seq_ || end > cache.capacity() || end > max_seq_)
    fail("Gpt::forward_cached: {} tokens after position {} reach past the cache's {} positions or the model's {}", T,
         cache.length(), cache.capacity(), max_seq_);
  check_tokens("inputs", inputs, size_t(B) * size_t(T), shape_.vocab_size);
  backward_ready_ = false;
  compact_head_ = false;
  head_rows_ = B * T;
  segments_ = nullptr;  // a generated sequence is one sample
  moe_.set_rows(nullptr, B, T);
  logits_forward(inputs, nullptr, B, T, hooks, &cache);
  cache.advance(T);
}

const TokenSegment* Gpt::copy_segments(const RowSegments* segments, int B, int T) {
  if (!segments) return nullptr;
  if (segments->batch() != B || segments->seq() != T)
    fail("Gpt::forward: the row segments are shaped for {} rows of {} tokens, the micro-batch is {} x {}",
         segments->batch(), segments->seq(), B, T);
  device_.copy(acts_.segments.data(), segments->table(), sizeof(TokenSegment) * size_t(B) * size_t(T),
               device_.compute());
  return acts_.segments.data();
}

int Gpt::head_chunks(int N) const { return (N + acts_.logit_rows() - 1) / acts_.logit_rows(); }

// Whole chunks from the end and what is left first: the last chunk, which backward need not compute
// again, is a whole one.
Gpt::HeadChunk Gpt::head_chunk(int c, int N) const {
  const int end = N - (head_chunks(N) - 1 - c) * acts_.logit_rows();
  const int first = std::max(0, end - acts_.logit_rows());
  return {first, end - first};
}

// The head's rows: the final norm's output, or the rows of it whose target counts, gathered into
// dln (free until backward's head, which writes their gradient into lnf, no longer needed, and
// scatters it back into dln).
const void* Gpt::head_input() const { return compact_head_ ? acts_.dln.data() : acts_.lnf.data(); }
void* Gpt::head_input_grad() { return compact_head_ ? acts_.lnf.data() : acts_.dln.data(); }
const int32_t* Gpt::head_targets() const {
  return compact_head_ ? acts_.head_targets.data() : acts_.targets.data();
}
int Gpt::batch_row_of_head_row(int r) const { return compact_head_ ? counted_rows_[size_t(r)] : r; }

// LM head: logits = x · Wᵀ for the chunk's rows x of head_input(), W the token embedding (tied) or
// lm_head.weight, both [Vp, C].
void Gpt::head_logits(const void* w_head, HeadChunk chunk) {
  const int C = shape_.d_model;
  const auto* x = static_cast<const char*>(head_input()) + size_t(chunk.first) * C * dtype_size(ops_.dtype());
  ops_.matmul_forward(acts_.logits.data(), x, w_head, nullptr, chunk.rows, C, padded_vocab(),
                      WeightLayout::OutputMajor);
  if (final_softcap_ > 0.0f)
    ops_.softcap_forward(acts_.logits.data(), size_t(chunk.rows) * size_t(padded_vocab()), final_softcap_);
}

void Gpt::logits_forward(const int32_t* inputs, const int32_t* targets, int B, int T, ParamHooks& hooks,
                         KvCache* cache) {
  const int C = shape_.d_model, V = shape_.vocab_size, Vp = padded_vocab(), L = shape_.n_layer, N = B * T;
  const size_t esz = dtype_size(ops_.dtype());
  device_.copy(acts_.inputs.data(), inputs, sizeof(int32_t) * N, device_.compute());

  // Learned positions from the first new token's: the rows of wpe from position pos on.
  const size_t pos = cache ? size_t(cache->length()) : 0;
  auto emb = static_cast<const char*>(fetch(hooks, kEmbeddingsGroup));
  ops_.embedding_forward(acts_.residual(0), acts_.inputs.data(), emb,
                         recipe_.rotary ? nullptr : emb + (wpe_offset_ + pos * size_t(C)) * esz, segments_, B, T, C);
  hooks.release(kEmbeddingsGroup);
  if (embed_scale_ != 1.0f)
    ops_.scale_columns(acts_.residual(0), C, acts_.residual(0), C, N, C, embed_scale_, GradInto::Overwrite);

  for (int l = 0; l < L; l++) {
    const BlockParams p = fetch_block(hooks, l);
    block_forward(l, p, acts_.block(recompute_ ? 0 : l), B, T, true, cache);
    release_block(hooks, l);
  }

  const int lnf_group = gpt_ln_f_group(shape_);
  auto lnf = static_cast<const char*>(fetch(hooks, lnf_group));
  norm_forward(acts_.lnf.data(), acts_.lnf_mean.data(), acts_.lnf_rstd.data(), acts_.residual(L), lnf,
               recipe_.rms_norm ? nullptr : lnf + C * esz, N);
  hooks.release(lnf_group);

  const int M = head_rows_;
  if (compact_head_) {
    ops_.counted_rows(acts_.head_rows.data(), acts_.head_targets.data(), targets, N);
    ops_.moe_gather(acts_.dln.data(), acts_.lnf.data(), acts_.head_rows.data(), M, C);
  }
  const int head = gpt_head_group(shape_), chunks = head_chunks(M);
  const void* w_head = fetch(hooks, head);
  for (int c = targets ? 0 : chunks - 1; c < chunks; c++) {
    const HeadChunk chunk = head_chunk(c, M);
    head_logits(w_head, chunk);
    if (targets)
      ops_.cross_entropy_forward(acts_.lse.data() + chunk.first, acts_.losses.data() + chunk.first,
                                 acts_.logits.data(), head_targets() + chunk.first, chunk.rows, V, Vp);
  }
  hooks.release(head);
  first_logit_row_ = head_chunk(chunks - 1, M).first;

  last_B_ = B;
  last_T_ = T;
}

void Gpt::copy_logits_row(int row, float* out) {
  // The head's row of batch row `row`: itself, or its place among the rows whose target counts.
  int r = row;
  if (compact_head_) {
    const auto at = std::lower_bound(counted_rows_.begin(), counted_rows_.end(), row);
    r = at != counted_rows_.end() && *at == row ? int(at - counted_rows_.begin()) : -1;
  }
  if (r < first_logit_row_ || r >= head_rows_) {
    if (compact_head_)
      fail("Gpt::copy_logits_row: row {} is not among the logits kept, those of the last {} of the {} rows whose "
           "target counts",
           row, head_rows_ - first_logit_row_, head_rows_);
    fail("Gpt::copy_logits_row: row {} is not among the logits kept, rows [{}, {})", row, first_logit_row_,
         head_rows_);
  }
  const DType dt = ops_.dtype();
  const size_t V = size_t(shape_.vocab_size), esz = dtype_size(dt);
  std::vector<uint8_t> bytes(V * esz);
  const size_t at = size_t(r - first_logit_row_) * padded_vocab() * esz;
  device_.copy(bytes.data(), static_cast<const char*>(acts_.logits.data()) + at, bytes.size(), device_.compute());
  device_.synchronize(device_.compute());
  to_f32(dt, bytes.data(), out, V);
}

void Gpt::block_backward(int layer, BlockParams bp, BlockGrads bg, const BlockActivations& a, int B, int T) {
  using enum BlockRole;
  const size_t esz = dtype_size(ops_.dtype());
  const RoleOffsets& roles = blocks_[size_t(layer)];
  auto w = [&](BlockRole r) { return role_in(static_cast<const char*>(bp.params), roles, r, esz); };
  // null for a frozen block: its weights get no gradient
  auto dw = [&](BlockRole r) { return role_in(static_cast<char*>(bg.params), roles, r, esz); };
  const int C = shape_.d_model, NH = shape_.n_head, NKV = shape_.kv_heads(), hd = shape_.head_size();
  const int QKV = shape_.qkv_width(), Q = shape_.q_width(), F = shape_.ff_width(), N = B * T;
  const int fc = recipe_.swiglu ? 2 * F : F;
  void* dres = acts_.dresidual.data();  // holds d(block output) on entry, d(block input) on exit
  // An intermediate gradient with one writer is written over, not cleared and accumulated; the
  // residual stream's gradient dres passes through each branch unchanged and the branch's norm adds
  // its own onto it.
  constexpr auto Set = GradInto::Overwrite, Add = GradInto::Accumulate;
  // The LoRA adapters of a projection add their part of its input's gradient dx (output gradient dout).
  auto adapted = [&](BlockRole r) { return bp.adapters && lora_.adapts(r); };
  auto adapt = [&](BlockRole r, void* dx, const void* dout, const void* x) {
    if (adapted(r)) lora_.backward(r, layer, recompute_ ? 0 : layer, dx, bg.adapters, dout, x, bp.adapters, N);
  };

  // Gemma's norms of the branch outputs: the gradient of their input into dln (free until the
  // branch's input projection writes it).
  auto post_norm = [&](const void* out, BlockRole r, const float* rstd) -> const void* {
    if (!recipe_.gemma) return dres;
    ops_.rmsnorm_backward(acts_.dln.data(), dw(r), dres, out, w(r), rstd, N, C, Set, norm_offset_);
    return acts_.dln.data();
  };

  // MLP branch: residual3 = residual2 + proj(act(fc(norm_2(residual2))))
  const void* dmlp = post_norm(a.mlp_out, PostFfNormWeight, a.mlp_rstd);
  if (shape_.sparse(layer)) {
    const bool apart = bp.experts != nullptr, fp32 = bp.router != nullptr;
    moe_.backward(recompute_ ? 0 : layer, acts_.dln.data(),
                  {fp32 ? static_cast<void*>(bg.router) : dw(RouterWeight), apart ? bg.experts : dw(ExpertWeights),
                   dw(SharedExpertWeights), dw(SharedGateWeight), fp32},
                  dmlp, a.ln2,
                  {fp32 ? static_cast<const void*>(bp.router) : w(RouterWeight), apart ? bp.experts : w(ExpertWeights),
                   w(SharedExpertWeights), w(SharedGateWeight), fp32},
                  N);
  } else if (recipe_.swiglu || adapted(FcProjWeight)) {
    ops_.matmul_backward(acts_.dfch_gelu.data(), dw(FcProjWeight), dw(FcProjBias), dmlp, a.fch_gelu, w(FcProjWeight),
                         N, F, C, weights_, Set);
    adapt(FcProjWeight, acts_.dfch_gelu.data(), dmlp, a.fch_gelu);
    if (recipe_.swiglu)
      ops_.swiglu_backward(acts_.dfch.data(), a.fch, acts_.dfch_gelu.data(), N, F, Set, gate_);
    else
      ops_.gelu_backward(acts_.dfch.data(), a.fch, acts_.dfch_gelu.data(), size_t(N) * size_t(F), Set);
  } else {
    ops_.matmul_gelu_backward(acts_.dfch.data(), acts_.dfch_gelu.data(), dw(FcProjWeight), dw(FcProjBias), dmlp,
                              a.fch_gelu, a.fch, w(FcProjWeight), N, F, C, weights_, Set);
  }
  if (!shape_.sparse(layer)) {
    ops_.matmul_backward(acts_.dln.data(), dw(FcWeight), dw(FcBias), acts_.dfch.data(), a.ln2, w(FcWeight), N, C, fc,
                         weights_, Set);
    adapt(FcWeight, acts_.dln.data(), acts_.dfch.data(), a.ln2);
  }
  norm_backward(dres, dw(Norm2Weight), dw(Norm2Bias), acts_.dln.data(), a.residual2, w(Norm2Weight), a.ln2_mean,
                a.ln2_rstd, N, Add);

  // Attention branch: residual2 = input + proj(attention(qkv(norm_1(input))))
  const void* dattn = post_norm(a.attn_out, PostAttnNormWeight, a.attn_rstd);
  ops_.matmul_backward(acts_.datty.data(), dw(OutWeight), dw(OutBias), dattn, a.atty, w(OutWeight), N, Q, C, weights_,
                       Set);
  adapt(OutWeight, acts_.datty.data(), dattn, a.atty);
  if (recipe_.rotary) {
    // The gradient of what attention read: of qkv itself, or of the q/k norms' output.
    ActTensor& d_att_in = recipe_.qk_norm ? acts_.dqkv_att : acts_.dqkv;
    ops_.gqa_attention_backward(d_att_in.data(), acts_.datt.data(), acts_.datty.data(), a.qkv_att, a.atty, a.att,
                                segments_, B, T, NH, NKV, hd, shape_.layer_window(layer), Set, scores_);
    ops_.rope_backward(d_att_in.data(), rope_cos(layer), rope_sin(layer), segments_, B, T, NH, NKV, hd);
    if (recipe_.qk_norm) {
      const QkNormVectors v = qk_norm_vectors(shape_);
      ops_.qk_norm_backward(acts_.dqkv.data(), dw(QNormWeight), dw(KNormWeight), acts_.dqkv_att.data(), a.qkv,
                            w(QNormWeight), w(KNormWeight), a.qk_rstd, N, v.q, v.k, v.width, Set, norm_offset_);
    }
  } else {
    ops_.attention_backward(acts_.dqkv.data(), acts_.datt.data(), acts_.datty.data(), a.qkv, a.atty, a.att, segments_,
                            B, T, C, NH, Set);
  }
  ops_.matmul_backward(acts_.dln.data(), dw(QkvWeight), dw(QkvBias), acts_.dqkv.data(), a.ln1, w(QkvWeight), N, C,
                       QKV, weights_, Set);
  adapt(QkvWeight, acts_.dln.data(), acts_.dqkv.data(), a.ln1);
  norm_backward(dres, dw(Norm1Weight), dw(Norm1Bias), acts_.dln.data(), acts_.residual(layer), w(Norm1Weight),
                a.ln1_mean, a.ln1_rstd, N, Add);
}

void Gpt::copy_losses(float* out) {
  const size_t N = size_t(last_B_) * size_t(last_T_);
  if (!compact_head_) {
    device_.copy(out, acts_.losses.data(), sizeof(float) * N, device_.compute());
    device_.synchronize(device_.compute());
    return;
  }
  std::vector<float> head(counted_rows_.size());
  device_.copy(head.data(), acts_.losses.data(), sizeof(float) * head.size(), device_.compute());
  device_.synchronize(device_.compute());
  std::fill(out, out + N, std::numeric_limits<float>::quiet_NaN());
  for (size_t r = 0; r < head.size(); ++r) out[counted_rows_[r]] = head[r];
}

void Gpt::backward(ParamHooks& hooks, float dloss, const float* target_weights, float aux_dloss) {
  if (!backward_ready_)
    fail("Gpt::backward: needs a forward with targets first (and runs once per forward)");
  backward_ready_ = false;
  const MoeShape& moe = shape_.moe;
  if (moe_.enabled())
    moe_.set_aux_scale(moe.output_router_logits
                           ? float(double(std::isnan(aux_dloss) ? dloss : aux_dloss) * moe.router_aux_loss_coef)
                           : 0.0f);
  const int B = last_B_, T = last_T_, N = B * T;
  const int C = shape_.d_model, V = shape_.vocab_size, Vp = padded_vocab(), L = shape_.n_layer;
  const size_t esz = dtype_size(ops_.dtype());

  // LM head, chunk by chunk from the last. Tied, it is the embeddings' group, whose gradient buffer
  // stays open until the lookup's gradient is added last. Frozen groups get no gradient buffer
  // (null gradients).
  const int M = head_rows_;
  const int head = gpt_head_group(shape_), chunks = head_chunks(M);
  const void* w_head = fetch(hooks, head);
  auto dw_head = static_cast<char*>(grads_if_trained(hooks, head));
  void* dlogits = acts_.logits.data();  // in place over the logits
  if (target_weights) {  // the weights of the head's rows, on the device
    head_weights_.resize(size_t(M));
    for (int r = 0; r < M; r++) head_weights_[size_t(r)] = target_weights[batch_row_of_head_row(r)];
    device_.copy(acts_.head_weights.data(), head_weights_.data(), sizeof(float) * size_t(M), device_.compute());
  }
  for (int c = chunks - 1; c >= 0; c--) {
    const HeadChunk chunk = head_chunk(c, M);
    if (c != chunks - 1) head_logits(w_head, chunk);
    ops_.cross_entropy_backward(dlogits, acts_.logits.data(), acts_.lse.data() + chunk.first,
                                head_targets() + chunk.first, acts_.counted.data(), dloss, chunk.rows, V, Vp,
                                final_softcap_, target_weights ? acts_.head_weights.data() + chunk.first : nullptr);
    const size_t rows_at = size_t(chunk.first) * C * esz;
    ops_.matmul_backward(static_cast<char*>(head_input_grad()) + rows_at, dw_head, nullptr, dlogits,
                         static_cast<const char*>(head_input()) + rows_at, w_head, chunk.rows, C, Vp,
                         WeightLayout::OutputMajor, GradInto::Overwrite);
  }
  if (compact_head_) ops_.scatter_rows(acts_.dln.data(), head_input_grad(), acts_.head_rows.data(), M, N, C);
  if (head != kEmbeddingsGroup) grads_ready_if_trained(hooks, head);
  hooks.release(head);

  const int lnf_group = gpt_ln_f_group(shape_);
  auto lnf = static_cast<const char*>(fetch(hooks, lnf_group));
  auto dlnf = static_cast<char*>(grads_if_trained(hooks, lnf_group));
  norm_backward(acts_.dresidual.data(), dlnf, recipe_.rms_norm || !dlnf ? nullptr : dlnf + C * esz, acts_.dln.data(),
                acts_.residual(L), lnf, acts_.lnf_mean.data(), acts_.lnf_rstd.data(), N, GradInto::Overwrite);
  grads_ready_if_trained(hooks, lnf_group);
  hooks.release(lnf_group);

  // Down to the lowest block that trains: below it, nothing needs a gradient.
  for (int l = L - 1; l >= lowest_trained_block_; l--) {
    const BlockParams p = fetch_block(hooks, l);
    const BlockActivations a = acts_.block(recompute_ ? 0 : l);
    if (recompute_) block_forward(l, p, a, B, T, false);
    const int adapters = lora_.enabled() ? lora_group(shape_, l) : -1, experts = expert_groups_[size_t(l)];
    const int group = gpt_block_group(l);
    const bool trained = layout_.group_trainable(size_t(group));
    const BlockGrads g{grads_if_trained(hooks, group), adapters >= 0 ? grads_if_trained(hooks, adapters) : nullptr,
                       experts >= 0 ? grads_if_trained(hooks, experts) : nullptr,
                       trained ? static_cast<float*>(hooks.grads_fp32(group).data) : nullptr};
    block_backward(l, p, g, a, B, T);
    grads_ready_if_trained(hooks, gpt_block_group(l));
    if (adapters >= 0) grads_ready_if_trained(hooks, adapters);
    if (experts >= 0) grads_ready_if_trained(hooks, experts);
    release_block(hooks, l);
  }

  // The lookup needs no parameter values, only the token ids.
  if (!layout_.group_trainable(size_t(kEmbeddingsGroup))) return;
  auto demb = head == kEmbeddingsGroup ? dw_head : static_cast<char*>(grads(hooks, kEmbeddingsGroup));
  if (embed_scale_ != 1.0f)
    ops_.scale_columns(acts_.dresidual.data(), C, acts_.dresidual.data(), C, N, C, embed_scale_, GradInto::Overwrite);
  ops_.embedding_backward(demb, recipe_.rotary ? nullptr : demb + wpe_offset_ * esz, acts_.dresidual.data(),
                          acts_.inputs.data(), segments_, B, T, C);
  hooks.grads_ready(kEmbeddingsGroup);
}

}  // namespace zt
