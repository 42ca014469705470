#pragma once
// The mixture-of-experts MLP of a sparse block (GptShape::sparse; qwen3_moe, qwen2_moe, mixtral): a router
// (mlp.gate.weight [E, C]) whose softmax, in fp32, picks each token's top-k experts, their
// probabilities as weights (divided by their sum with norm_topk_prob); the tokens grouped by
// expert so that each expert runs its SwiGLU (gate and up [2I, C], down [C, I]) as one GEMM over
// its own tokens, never over all of them; and each token's output the weighted sum of its
// experts' outputs, in expert order. The routing stays on the device: the rows are grouped there
// and each projection of every expert is one grouped GEMM (ModelOps::moe_expert_forward) sized
// by the offsets on the device, so a forward and backward queue the same work whatever the routing
// (expert parallelism alone reads the counts on the host, for its all-to-all). qwen2_moe adds a shared expert that
// every token goes through, its output scaled by sigmoid(x · shared_expert_gate). Also the load-balancing loss
// transformers adds with output_router_logits: aux = E · Σ_e f_e · P_e over the sparse layers together, f_e the share
// of (token, layer) top-k slots given to expert e, P_e its mean probability; the tokens of a row's padding left out (as
// transformers leaves out what its attention mask masks), though the experts compute them.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "core/buffer.hpp"
#include "core/row_segments.hpp"
#include "kernels/backend.hpp"
#include "model/gpt_activations.hpp"
#include "model/gpt_shape.hpp"

namespace zt {

// A sparse block's MLP tensors (gpt_layout.hpp's roles; shared ones null without a shared expert),
// or their gradients (null: frozen). fp32_router: the router's are fp32 (kept in fp32 under a
// 16-bit dtype), the others in the model's dtype.
template <typename P>
struct MoeTensors {
  P router, experts, shared, shared_gate;
  bool fp32_router = false;
};
using MoeWeights = MoeTensors<const void*>;
using MoeGrads = MoeTensors<void*>;

// Expert parallelism: this rank's place in its group of `size` ranks, the group's q-th rank holding
// experts [q·E/size, (q+1)·E/size) of every sparse layer, and the group's all-to-all (pieces in
// the group's order, `dtype` elements; every rank of the world calls it at the same point).
struct ExpertGroup {
  int size = 1;
  int index = 0;
  std::function<void(const void* send, std::span<const size_t> send_counts, void* recv,
                     std::span<const size_t> recv_counts, DType dtype)>
      all_to_all;
};

class MoeBlock {
public:
  // slots: activation slots (n_layer, or 1 when the blocks are recomputed in backward).
  // fp32_routers: some router is kept in fp32 (its product runs in fp32 over the cast input, which
  // needs scratch of its own when the model computes in a 16-bit dtype).
  MoeBlock(const GptShape& shape, int max_batch, int max_seq, int slots, const Backend& backend,
           bool fp32_routers = false);
  // The bytes the constructor and set_group(a group of ep_size) register as activations (0 without
  // experts).
  static size_t bytes(const GptShape& shape, int max_batch, int max_seq, int slots, const ModelOps& ops,
                      int ep_size = 1, bool fp32_routers = false);

  bool enabled() const { return enabled_; }
  // From now on this rank computes only its own experts, over the rows its group routes to them,
  // which travel through the group's all-to-all (model/moe_block.cpp, "Expert parallelism"): the
  // weights' `experts` (and their gradients) are then this rank's E/size experts alone, side by side
  // (model/expert_layout.hpp).
  void set_group(ExpertGroup group);

  // The micro-batch's rows (null: B rows of T tokens without padding), whose padding the
  // load-balancing loss and the expert load leave out; for every forward and backward until the next call.
  void set_rows(const RowSegments* rows, int B, int T);

  // out [N, C] (written over) = the experts' weighted sum for x [N, C], the block's second norm's
  // output (and the gated shared expert's output). Keeps what backward needs in `slot`, and the
  // layer's counts and probabilities for aux_loss.
  void forward(int layer, int slot, void* out, const void* x, const MoeWeights& w, int N);
  // dx (written over) from dout; the weights' gradients added into g. Adds the load-balancing
  // loss's gradient, at the scale set_aux_scale gave, when output_router_logits.
  void backward(int slot, void* dx, const MoeGrads& g, const void* dout, const void* x, const MoeWeights& w, int N);

  // Ends a training forward: its aux loss and expert load added to the step's (on the device).
  void end_forward();
  // Queues the step's sums since the last call (aux loss, the largest expert load) into host[0..1]
  // (memory the device writes without a wait: pinned on a GPU) and starts the next step's from zero.
  void take_step_stats_into(double* host);

  // The load-balancing loss of the last forward of every sparse layer (NaN without experts). Reads
  // the device: waits for it.
  double aux_loss() const;
  // The gradient of the aux loss's part of the loss that backward applies: dloss · coefficient
  // (0: none).
  void set_aux_scale(float scale) { aux_scale_ = scale; }
  // tokens routed to the busiest expert over the mean, the largest over the sparse layers of the
  // last forward (1: perfectly balanced). Reads the device: waits for it.
  double max_load() const;

private:
  struct Slot {
    Buffer<float> probs, weights;        // [N, E], [N, K]
    Buffer<int32_t> experts, token, row; // [N, K]; [R] each routed row's token; [N·K] each slot's row
    Buffer<int32_t> offsets;             // [E + 1]: expert e's rows [offsets[e], offsets[e+1])
    ActTensor gate_up, act, y;           // [R, 2I], [R, I], [R, C]
    ActTensor shared_gate_up, shared_act, shared_y, shared_gate;  // [N, 2S], [N, S], [N, C], [N]
    // Expert parallelism: the tokens per expert (host), the rows of this rank's experts from every
    // rank of the group, expert by expert (ep_rows, ep_offsets), where each came from in what the
    // all-to-all receives (ep_from) and back (ep_to), and the counts per (group rank, own expert).
    std::vector<int> count;              // [E]
    ActTensor ep_rows;                   // [G·R, C]
    Buffer<int32_t> ep_from, ep_to;      // [G·R]
    Buffer<int32_t> ep_offsets;          // [E/G + 1]
    std::vector<int> ep_count;           // [G · E/G] (host)
    int ep_received = 0;
  };
  void read_counts(Slot& s);  // count from offsets, on the host (expert parallelism)
  // `experts` experts from `weights` (and `grads`) over R rows grouped by `offsets` (device); forward
  // keeps what backward needs in s.
  void experts_forward(Slot& s, const void* weights, const int32_t* offsets, int experts, int R, const void* rows,
                       void* y);
  void experts_backward(Slot& s, const void* weights, void* grads, const int32_t* offsets, int experts, int R,
                        const void* rows, const void* dy, void* drows);
  double* stats(int layer);  // the layer's moe_route_stats on the device
  std::array<double, 2> read_last() const;
  // Expert parallelism: the counts the group's ranks route to this rank's experts, and the orders.
  void exchange_counts(Slot& s);
  // rows [R, C] grouped by expert (every expert) to the owners, where they arrive expert by
  // expert in `out` [sum of ep_count, C] through `scratch`; and back (`back`: out -> rows).
  void dispatch(Slot& s, const void* rows, void* out);
  void combine_back(Slot& s, const void* in, void* rows);
  std::vector<int> own_counts(const Slot& s) const;  // rows per own expert, from every group rank

  GptShape shape_;
  Device& device_;
  ModelOps& ops_;
  bool enabled_;
  int C_, E_, K_, I_, S_;
  std::vector<Slot> slots_;
  ActTensor logits_, rows_, drows_, dy_, dact_, dgate_up_;  // scratch shared by every layer (logits fp32-wide
                                                            // with fp32 routers)
  Buffer<float> router_scratch_;  // [N, C]: a kept router's fp32 input, then its gradient (16-bit models)
  ActTensor dshared_gate_up_, dshared_act_, dshared_y_, dshared_gate_;
  Buffer<float> dweights_, daux_;
  // The micro-batch's padding: where each row's begins, on the device (null: none).
  Buffer<int32_t> padding_from_;
  const int32_t* padding_ = nullptr;
  int rows_B_ = 0, rows_T_ = 0;
  // Per sparse layer, from its last forward, the stats of moe_route_stats ([sparse layers, 2E + 1]),
  // and the step's aux loss and largest load so far.
  Buffer<double> stats_, step_stats_;
  mutable Buffer<double> last_stats_;  // read_last's
  std::vector<int> stats_index_;  // layer -> its row of stats_
  int sparse_layers_ = 0;
  float aux_scale_ = 0.0f;
  ExpertGroup group_;
  int max_tokens_ = 0, max_batch_ = 0;
  ActTensor ep_a_, ep_b_;                       // [G·R, C] each: rows in flight
  Buffer<float> ep_counts_out_, ep_counts_in_;  // [E]: counts through the all-to-all
  std::vector<size_t> send_counts_, recv_counts_;
  std::vector<int32_t> host_from_, host_to_, host_offsets_;
};

}  // namespace zt
