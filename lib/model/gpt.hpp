#pragma once
// A decoder-only transformer over a backend's ModelOps, of any family GptShape describes (GPT-2,
// Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3 text): one model whose blocks follow the shape's
// BlockRecipe, not a
// class per family. Pre-norm blocks (LayerNorm or RMSNorm), attention over one packed q/k/v
// projection (multi-head, or grouped-query with rotary positions and optional q/k norms), an MLP
// (GELU, or SwiGLU over packed gate and up projections), a final norm and an LM head, tied to the
// token embedding or not. The vocabulary is padded to a multiple of 128 inside (the embedding and
// an untied head have padded_vocab() rows; the padding rows stay zero and their logits take no
// part in the softmax); everything the model returns is in terms of the real vocabulary.
//
// Parameters live in one flat buffer described by layout() (gpt_layout.hpp). The model never
// owns them: it reads and writes them group by group through zt::ParamHooks, which the ZeRO
// engine implements (or zt::ResidentParams for a single process). It computes on one device with
// the backend's operator table, in the table's dtype (fp32 on the CPU).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "core/param_hooks.hpp"
#include "core/param_layout.hpp"
#include "core/row_segments.hpp"
#include "kernels/backend.hpp"
#include "model/gpt_activations.hpp"
#include "model/gpt_layout.hpp"
#include "model/gpt_shape.hpp"
#include "model/kv_cache.hpp"
#include "model/lora.hpp"
#include "model/expert_layout.hpp"
#include "model/lora_adapters.hpp"
#include "model/moe_block.hpp"

namespace zt {

// Gpt::init_params of a model of `shape` whose training layout is `layout` (model/lora.hpp), without
// the model: where the frozen weights of a seeded run come from when its checkpoint is exported.
void init_gpt_params(const GptShape& shape, const ParamLayout& layout, float* dst, size_t begin, size_t count,
                     uint64_t seed);

class Gpt {
public:
  // max_batch and max_seq bound every forward's B and T (max_seq <= shape.max_seq_len).
  // recompute: keep only each block's input in forward and recompute the block in backward
  // (activation checkpointing): activation memory of one block instead of n_layer.
  // parts: LoRA adapters and frozen tensors (model/lora.hpp): the layout marks what trains, and
  // backward computes gradients for nothing else (none below the lowest block that trains).
  // logits_bytes: what the LM head's logits may take at once (GptActivations' logit_rows).
  // head_rows: the most targets that count in a forward's micro-batch, when the data says (0: B·T):
  // the logits need not hold more rows at once (a forward with more computes more chunks).
  // experts: expert parallelism's place of this rank; the layout holds its own experts alone
  // (model/expert_layout.hpp), and set_expert_group must give the group of that place.
  // Throws zt::Error naming the field for an invalid shape or bound.
  Gpt(const GptShape& shape, int max_batch, int max_seq, bool recompute = false,
      const Backend& backend = cpu_backend(), const TrainedParts& parts = {}, size_t logits_bytes = kLogitsBytes,
      int head_rows = 0, ExpertPlace experts = {});

  const GptShape& shape() const { return shape_; }
  // The groups this rank holds (and the hooks serve), and the model's every tensor: the same but under
  // expert parallelism, where layout() holds this rank's experts only in groups of domain 1.
  const ParamLayout& layout() const { return layout_; }
  const ParamLayout& whole_layout() const { return whole_layout_; }
  ExpertPlace expert_place() const { return place_; }
  // Where layout()'s tensors lie in whole_layout()'s; null when they are the same.
  const LayoutMap* layout_map() const { return map_.get(); }
  int padded_vocab() const { return shape_.padded_vocab(); }
  int max_batch() const { return max_batch_; }
  int max_seq() const { return max_seq_; }
  bool recompute() const { return recompute_; }

  // Writes the initial value of flat elements [begin, begin + count) to dst[0, count): normal(0,
  // 0.02) for the embeddings and weight matrices (GPT-2: attn.c_proj and mlp.c_proj weights scaled
  // by 1/sqrt(2·n_layer)), biases 0, norm weights 1, padded vocabulary rows 0, LoRA's A
  // uniform(±1/sqrt(in)) (PEFT's kaiming_uniform with a = sqrt(5)) and B 0, and 0 past
  // layout().total (partition padding). Element i depends only on (seed, i), so any range equals
  // the same range of a full initialisation.
  void init_params(float* dst, size_t begin, size_t count, uint64_t seed) const;

  // The dtype the model computes in: the dtype of the views ParamHooks must hand it.
  DType dtype() const { return ops_.dtype(); }
  // The device it computes on.
  Device& device() const { return device_; }

  // inputs and targets are [B, T] token ids in [0, vocab_size), in host memory; a target may be
  // kIgnoredTarget (core/ignored_target.hpp): it carries no loss. Returns the mean cross-entropy
  // over the targets that count (PyTorch's cross_entropy with ignore_index), NaN when none counts
  // or targets is null (logits only). The LM head and the loss go a chunk of logit_rows() rows at a
  // time, keeping each row's log-sum-exp and loss, not its logits; when some targets count and some
  // do not, over the rows whose target counts only (gathered from the final norm's output, their
  // gradient scattered back in backward): a prompt's rows never reach the vocabulary projection.
  // Fetches and releases each group
  // in order: embeddings, each block, the final norm, then the LM head's group (the embeddings
  // again when tied).
  // segments: the samples in each row (packed rows, or one padded sample per row), shaped [B, T]:
  // a token attends only to its own sample's tokens and its position (learned or rotary) restarts
  // at 0 with each sample; the loss is the same mean over the targets that count, so a sample's
  // last target (the next sample's first token) and padding's targets should be kIgnoredTarget.
  // Null: every row is one sample. The table is copied to the device as the tokens are (queued from
  // memory that must hold it until the step's end: pinned on a GPU, where a CUDA graph of this
  // forward replays the copy from the same address); backward uses the same segments.
  float forward(const int32_t* inputs, const int32_t* targets, int B, int T, ParamHooks& hooks,
                const RowSegments* segments = nullptr);
  // The targets of the last forward that count.
  int counted_targets() const { return last_counted_; }

  // Adds the gradient of dloss · loss of the last forward (which must have had targets) into
  // hooks.grads(g), in reverse group order: the LM head, the final norm, the blocks from the last,
  // and grads_ready(0) last (after the embedding lookup's gradient). With a tied head grads(0) is
  // requested first, for the LM head, and stays open throughout. Without a target that counts the
  // gradient is zero (the groups still pass through the hooks). The LM head goes chunk by chunk
  // from the last (whose logits forward left in place): the logits again, their gradient over
  // them, its products into the final norm's gradient and the head's.
  // target_weights (host memory, one per target of the last forward's [B, T], or null): the
  // gradient of dloss · Σ_n target_weights[n] · (target n's loss) instead, each counted target's
  // loss weighted by its own weight rather than divided by the count (preference training: a
  // sequence's log-probability is the sum over its tokens; ORPO adds the chosen sequence's mean
  // NLL, prompt included, with other weights). Those of targets that do not count are not read.
  // aux_dloss: what the load-balancing loss (output_router_logits) is multiplied by in the loss
  // backward differentiates, before its coefficient; NaN: dloss.
  void backward(ParamHooks& hooks, float dloss, const float* target_weights = nullptr,
                float aux_dloss = std::numeric_limits<float>::quiet_NaN());

  // The loss of each target of the last forward, [B·T] (NaN where the target does not count), into
  // out (host memory; waits for the device).
  void copy_losses(float* out);

  // The last forward's load-balancing loss (model/moe_block.hpp) before its coefficient: NaN for a
  // model without experts. (forward returns the cross-entropy alone.)
  double aux_loss() const { return moe_.aux_loss(); }
  // Expert parallelism (MoeBlock::set_group): this rank computes only its group's share of the experts.
  void set_expert_group(ExpertGroup group);
  // Tokens routed to the busiest expert over the mean in the last forward (the largest over the
  // sparse layers); NaN without experts.
  double max_expert_load() const { return moe_.enabled() ? moe_.max_load() : std::numeric_limits<double>::quiet_NaN(); }
  // The sums over the forwards with targets since the last call, kept on the device: the aux loss, and
  // the largest max_expert_load; queued into host[0..1] (memory the device writes without a wait),
  // read after the device is waited for. Nothing without experts.
  void take_expert_stats_into(double* host) { moe_.take_step_stats_into(host); }

  // Generation: the logits of T new tokens per sequence (inputs [B, T], host memory) at positions
  // [cache.length(), cache.length() + T), attending to the positions the cache holds; their keys
  // and values are added to it. B = cache.batch(); the positions must lie below max_seq(), and
  // cache.capacity() too. Fetches the groups as forward does; no backward follows.
  void forward_cached(const int32_t* inputs, int B, int T, KvCache& cache, ParamHooks& hooks);

  // LoRA dropout from here on with masks drawn from `seed` (each training micro-batch its own), or
  // none (the default: evaluation and generation).
  void set_dropout_seed(std::optional<uint64_t> seed) { lora_.set_dropout_seed(seed); }
  // The LoRA adapters off (forward as the model without them) or on (model/lora_adapters.hpp).
  void set_adapters_off(bool off) { lora_.set_off(off); }

  // Rows of logits the LM head computes at once.
  int logit_rows() const { return acts_.logit_rows(); }
  // The rows the LM head computed in the last forward: B·T, or with targets some of which do not
  // count, the rows whose target counts.
  int head_rows() const { return head_rows_; }
  // Off: the head computes every row, counted or not (what the rows that count are checked and
  // measured against). On by default.
  void set_head_on_counted_rows(bool on) { head_on_counted_rows_ = on; }
  // Logits of the last forward's last chunk: rows [first_logit_row(), head_rows()) of the head's
  // rows (those of [B, T] in order, or of the rows whose target counts), each padded_vocab() wide,
  // row-major in device memory, in dtype(); all of them when head_rows() <= logit_rows(). Columns
  // from vocab_size on are not logits of real tokens. Overwritten by backward. On the CPU backend:
  // fp32 host memory.
  const float* logits() const { return static_cast<const float*>(acts_.logits.data()); }
  int first_logit_row() const { return first_logit_row_; }
  // Row `row` of [B, T] of the last forward's logits (one of the last chunk's, the last row among
  // them), its first vocab_size() values, as fp32 in host memory (copied from the device; waits for
  // it).
  void copy_logits_row(int row, float* out);

  // The groups forward then backward fetch, in order (what ZeRO stage 3 prefetches by).
  std::vector<int> fetch_order() const;

  // Trainable parameters as exported (unpadded vocabulary) = GptShape::num_params().
  size_t num_params() const { return shape_.num_params(); }
  // Training FLOPs per token for MFU, the PaLM / nanoGPT estimate: 6·N for the matmuls of forward
  // and backward (N = num_params(), less an untied token embedding: a lookup multiplies nothing,
  // and less the experts a token is not routed to: GptShape::active_params)
  // plus 12·n_head·head_dim·keys per layer for the attention scores and their weighted sums over
  // `keys` keys per query (max_seq() by default, as nanoGPT counts a window; the length of a
  // token's own sample in rows of samples), min(keys, sliding_window) in a sliding layer.
  // Grouped-query attention, SwiGLU's three projections and an untied head enter through N. With
  // frozen parameters (LoRA's base, training.freeze) backward computes less: a frozen weight costs 4
  // FLOPs where backward reaches it and 2 below the lowest block that trains, and LoRA's adapters
  // count as parameters.
  size_t flops_per_token() const { return flops_per_token(max_seq_); }
  size_t flops_per_token(int keys) const;
  // Of flops_per_token, the LM head's vocabulary projection: it computes only the rows whose target
  // counts, where the rest computes every token.
  size_t head_flops_per_row() const;
  // The attention part of the above per query-key pair, summed over the full layers and over the
  // sliding ones: a step costs flops_per_token(0)·tokens + full·pairs + sliding·pairs in window
  // (StepTokens::attended and attended_in_window).
  struct PairFlops {
    size_t full = 0, sliding = 0;
  };
  PairFlops flops_per_pair() const;

private:
  // Embeddings, blocks, final norm and LM head over [B, T] inputs (and the cache's keys and values
  // when there is one). With targets (on the device), each chunk's logits give their rows' lse and
  // losses; without, only the last chunk's logits are computed.
  void logits_forward(const int32_t* inputs, const int32_t* targets, int B, int T, ParamHooks& hooks,
                      KvCache* cache);
  // The device's copy of the forward's segments (acts_.segments), or null for rows of one sample.
  const TokenSegment* copy_segments(const RowSegments* segments, int B, int T);
  // The rows [first, first + rows) of the LM head's chunk `c` of head_chunks(N), and their logits
  // into acts_.logits.
  struct HeadChunk {
    int first, rows;
  };
  HeadChunk head_chunk(int c, int N) const;
  int head_chunks(int N) const;
  void head_logits(const void* w_head, HeadChunk chunk);
  // The head's rows [head_rows_, C] (the final norm's output, or its rows whose target counts), the
  // buffer their gradient goes into, and their targets (device memory).
  const void* head_input() const;
  void* head_input_grad();
  const int32_t* head_targets() const;
  // The row of [B, T] the head's row r is.
  int batch_row_of_head_row(int r) const;
  // cache: attend to its positions and add this block's keys and values (generation).
  // A block's parameters, its adapters' (null without adapters) and its experts' when they lie in a
  // group of their own (expert parallelism; null: in the block's), with their gradients in backward
  // (null where frozen); router: its router's fp32 values (gradients) when it is kept in fp32 under
  // a 16-bit dtype (ParamHooks::fetch_fp32), else null.
  struct BlockParams {
    const void* params;
    const void* adapters;
    const void* experts;
    const float* router = nullptr;
  };
  struct BlockGrads {
    void* params;
    void* adapters;
    void* experts;
    float* router = nullptr;
  };
  void block_forward(int layer, BlockParams p, const BlockActivations& a, int B, int T, bool write_output,
                     KvCache* cache = nullptr);
  void block_backward(int layer, BlockParams p, BlockGrads g, const BlockActivations& a, int B, int T);
  BlockParams fetch_block(ParamHooks& hooks, int layer);
  void release_block(ParamHooks& hooks, int layer);
  // Gradients of group g (requested from the hooks), or null when it is frozen.
  void* grads_if_trained(ParamHooks& hooks, int g);
  void grads_ready_if_trained(ParamHooks& hooks, int g);
  // The block's norms and the final norm: LayerNorm (mean saved) or RMSNorm.
  void norm_forward(void* out, float* mean, float* rstd, const void* inp, const char* weight, const char* bias, int N);
  void norm_backward(void* dinp, char* dweight, char* dbias, const void* dout, const void* inp, const char* weight,
                     const float* mean, const float* rstd, int N, GradInto dinp_into);
  void fill_rope_tables();
  void fill_rope_table(const GptShape& shape, Buffer<float>& cos, Buffer<float>& sin);
  // The rotary tables of a layer: the sliding layers' own where their base differs.
  const float* rope_cos(int layer) const;
  const float* rope_sin(int layer) const;
  const void* fetch(ParamHooks& hooks, int g);  // checks the view's dtype
  void* grads(ParamHooks& hooks, int g);

  GptShape shape_;
  Device& device_;
  ModelOps& ops_;
  int max_batch_, max_seq_;
  bool recompute_;
  ExpertPlace place_;
  ParamLayout whole_layout_, layout_;
  std::shared_ptr<const LayoutMap> map_;
  std::vector<int> expert_groups_;  // per layer, its experts' own group (expert parallelism), or -1
  BlockRecipe recipe_;
  std::vector<RoleOffsets> blocks_;  // each block's (a sparse block's MLP part differs)
  LoraAdapters lora_;
  // Backward goes down to this block (n_layer: none): below it nothing trains.
  int lowest_trained_block_;
  WeightLayout weights_;  // how the projections are stored (GPT-2's Conv1D or nn.Linear)
  float norm_offset_;      // RMSNorm scales by norm_offset_ + w (Gemma: 1)
  Gate gate_;              // the gated MLP's activation
  AttentionScores scores_;
  float embed_scale_;      // the embeddings' factor (Gemma: sqrt(d_model) in the compute dtype), else 1
  float final_softcap_;    // soft-capping of the logits (Gemma's final_logit_softcapping), else 0
  size_t wpe_offset_;     // of wpe.weight inside the embeddings group (learned positions only)
  GptActivations acts_;
  MoeBlock moe_;
  // What backward needs to know about the last forward.
  int last_B_ = 0, last_T_ = 0, last_counted_ = 0, first_logit_row_ = 0;
  int head_rows_ = 0;           // rows the head computed
  bool compact_head_ = false;   // only the rows whose target counts
  bool head_on_counted_rows_ = true;
  std::vector<int32_t> counted_rows_;  // the rows of [B, T] whose target counts, in order (host)
  std::vector<float> head_weights_;    // a backward's target weights of the head's rows (host)
  const TokenSegment* segments_ = nullptr;  // the last forward's, on the device (null: one sample per row)
  bool backward_ready_ = false;
};

}  // namespace zt
