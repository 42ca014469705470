#include "model/moe_block.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.hpp"

namespace zt {

namespace {

// Elements of what one slot keeps and of the scratch, for B·T = n tokens, in a group of ep ranks
// (expert parallelism: up to ep·routed rows reach this rank's experts).
struct MoeSizes {
  size_t tokens, routed, C, E, K, I, S, ep;
  bool fp32_routers;  // under a 16-bit dtype: fp32 logits and the router's fp32 scratch
  MoeSizes(const GptShape& s, int max_batch, int max_seq, int ep_size, bool fp32_routers)
      : tokens(size_t(max_batch) * size_t(max_seq)),
        routed(tokens * size_t(s.moe.top_k)),
        C(size_t(s.d_model)),
        E(size_t(s.moe.num_experts)),
        K(size_t(s.moe.top_k)),
        I(size_t(s.expert_width())),
        S(size_t(s.moe.d_shared)),
        ep(size_t(ep_size)),
        fp32_routers(fp32_routers) {}
  size_t shared_bytes(size_t esz) const { return S > 0 ? tokens * (3 * S + C + 1) * esz : 0; }
  size_t expert_rows() const { return ep * routed; }
  size_t slot_bytes(size_t esz) const {
    return (tokens * E + tokens * K) * sizeof(float) + (2 * tokens * K + routed + E + 1) * sizeof(int32_t) +
           expert_rows() * 3 * I * esz + routed * C * esz + shared_bytes(esz) + parallel_slot_bytes(esz);
  }
  size_t logits_bytes(size_t esz) const { return tokens * E * (fp32_routers ? sizeof(float) : esz); }
  size_t router_scratch() const { return fp32_routers ? tokens * C : 0; }  // floats
  size_t scratch_bytes(size_t esz) const {
    return logits_bytes(esz) + (3 * routed * C + expert_rows() * 3 * I) * esz +
           (tokens * K + E + router_scratch()) * sizeof(float) + shared_bytes(esz) +
           (ep > 1 ? 2 * expert_rows() * C * esz + 2 * E * sizeof(float) : 0);
  }
  // A slot's expert-parallel part: the rows received, and where they came from and go back to.
  size_t parallel_slot_bytes(size_t esz) const {
    return ep > 1 ? expert_rows() * (C * esz + 2 * sizeof(int32_t)) + (E / ep + 1) * sizeof(int32_t) : 0;
  }
};

int sparse_layers(const GptShape& shape) {
  int n = 0;
  for (int l = 0; l < shape.n_layer; ++l) n += shape.sparse(l) ? 1 : 0;
  return n;
}

// What every layer shares besides the scratch: each row's padding start, and the stats of every
// sparse layer's last forward and of the step.
size_t shared_bytes(const GptShape& shape, int max_batch) {
  return size_t(max_batch) * sizeof(int32_t) +
         (size_t(sparse_layers(shape)) * (2 * size_t(shape.moe.num_experts) + 1) + 4) * sizeof(double);
}

int sparse_slots(const GptShape& shape, int slots) {
  if (slots == 1) return 1;
  return shape.n_layer;  // indexed by layer; a dense layer's slot stays empty
}

}  // namespace

size_t MoeBlock::bytes(const GptShape& shape, int max_batch, int max_seq, int slots, const ModelOps& ops, int ep_size,
                       bool fp32_routers) {
  if (!shape.moe.enabled()) return 0;
  const MoeSizes z(shape, max_batch, max_seq, ep_size, fp32_routers && ops.dtype() != DType::F32);
  const size_t esz = dtype_size(ops.dtype());
  size_t kept = 0;
  if (slots == 1) {
    kept = z.slot_bytes(esz);
  } else {
    for (int l = 0; l < shape.n_layer; ++l) kept += shape.sparse(l) ? z.slot_bytes(esz) : 0;
  }
  return kept + z.scratch_bytes(esz) + shared_bytes(shape, max_batch);
}

MoeBlock::MoeBlock(const GptShape& shape, int max_batch, int max_seq, int slots, const Backend& backend,
                   bool fp32_routers)
    : shape_(shape),
      device_(backend.device),
      ops_(backend.model),
      enabled_(shape.moe.enabled()),
      C_(shape.d_model),
      E_(shape.moe.num_experts),
      K_(shape.moe.top_k),
      I_(shape.expert_width()),
      S_(shape.moe.d_shared) {
  if (!enabled_) return;
  max_tokens_ = max_batch * max_seq;
  max_batch_ = max_batch;
  const DType dt = ops_.dtype();
  const MoeSizes z(shape, max_batch, max_seq, 1, fp32_routers && dt != DType::F32);
  Device& d = device_;
  const MemSpace dev = MemSpace::Device;
  constexpr MemCategory act = MemCategory::Activations;
  slots_.resize(size_t(sparse_slots(shape, slots)));
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots != 1 && !shape.sparse(int(i))) continue;
    Slot& s = slots_[i];
    s.probs = Buffer<float>(d, dev, act, z.tokens * z.E);
    s.weights = Buffer<float>(d, dev, act, z.tokens * z.K);
    s.experts = Buffer<int32_t>(d, dev, act, z.tokens * z.K);
    s.row = Buffer<int32_t>(d, dev, act, z.tokens * z.K);
    s.token = Buffer<int32_t>(d, dev, act, z.routed);
    s.offsets = Buffer<int32_t>(d, dev, act, z.E + 1);
    s.gate_up = ActTensor(d, dt, z.routed * 2 * z.I);
    s.act = ActTensor(d, dt, z.routed * z.I);
    s.y = ActTensor(d, dt, z.routed * z.C);
    s.count.assign(z.E, 0);
    if (z.S > 0) {
      s.shared_gate_up = ActTensor(d, dt, z.tokens * 2 * z.S);
      s.shared_act = ActTensor(d, dt, z.tokens * z.S);
      s.shared_y = ActTensor(d, dt, z.tokens * z.C);
      s.shared_gate = ActTensor(d, dt, z.tokens);
    }
  }
  if (z.S > 0) {
    dshared_gate_up_ = ActTensor(d, dt, z.tokens * 2 * z.S);
    dshared_act_ = ActTensor(d, dt, z.tokens * z.S);
    dshared_y_ = ActTensor(d, dt, z.tokens * z.C);
    dshared_gate_ = ActTensor(d, dt, z.tokens);
  }
  logits_ = ActTensor(d, z.fp32_routers ? DType::F32 : dt, z.tokens * z.E);
  if (z.fp32_routers) router_scratch_ = Buffer<float>(d, dev, act, z.router_scratch());
  rows_ = ActTensor(d, dt, z.routed * z.C);
  drows_ = ActTensor(d, dt, z.routed * z.C);
  dy_ = ActTensor(d, dt, z.routed * z.C);
  dact_ = ActTensor(d, dt, z.routed * z.I);
  dgate_up_ = ActTensor(d, dt, z.routed * 2 * z.I);
  dweights_ = Buffer<float>(d, dev, act, z.tokens * z.K);
  daux_ = Buffer<float>(d, dev, act, z.E);
  padding_from_ = Buffer<int32_t>(d, dev, act, size_t(max_batch));
  sparse_layers_ = sparse_layers(shape);
  stats_index_.assign(size_t(shape.n_layer), -1);
  for (int l = 0, i = 0; l < shape.n_layer; ++l)
    if (shape.sparse(l)) stats_index_[size_t(l)] = i++;
  stats_ = Buffer<double>(d, dev, act, size_t(sparse_layers_) * (2 * z.E + 1));  // zeros: no tokens yet
  step_stats_ = Buffer<double>(d, dev, act, 2);
  last_stats_ = Buffer<double>(d, dev, act, 2);
}

void MoeBlock::set_rows(const RowSegments* rows, int B, int T) {
  padding_ = nullptr;
  rows_B_ = B;
  rows_T_ = T;
  if (!rows || !enabled_) return;
  // Queued from the rows' own table (pinned on a GPU): a graph replays the copy from it.
  device_.copy(padding_from_.data(), rows->padding_table(), size_t(B) * sizeof(int32_t), device_.compute());
  padding_ = padding_from_.data();
}

double* MoeBlock::stats(int layer) {
  return stats_.data() + size_t(stats_index_[size_t(layer)]) * (2 * size_t(E_) + 1);
}

void MoeBlock::set_group(ExpertGroup group) {
  if (group.size < 1 || (enabled_ && E_ % group.size != 0) || group.index < 0 || group.index >= group.size)
    fail("expert parallelism: rank {} of a group of {} cannot hold an equal share of {} experts", group.index,
         group.size, E_);
  group_ = std::move(group);
  if (!enabled_ || group_.size == 1) return;
  const MoeSizes z(shape_, max_tokens_, 1, group_.size, false);  // what the group adds: no router part
  const DType dt = ops_.dtype();
  Device& d = device_;
  constexpr MemCategory act = MemCategory::Activations;
  auto resize = [&](ActTensor& t, size_t n) {
    t = ActTensor();  // freed first: the old and the new are never held together
    t = ActTensor(d, dt, n);
  };
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.count.empty()) continue;  // a dense layer's
    resize(s.gate_up, z.expert_rows() * 2 * z.I);
    resize(s.act, z.expert_rows() * z.I);
    resize(s.ep_rows, z.expert_rows() * z.C);
    s.ep_from = Buffer<int32_t>(d, MemSpace::Device, act, z.expert_rows());
    s.ep_to = Buffer<int32_t>(d, MemSpace::Device, act, z.expert_rows());
    s.ep_offsets = Buffer<int32_t>(d, MemSpace::Device, act, z.E / z.ep + 1);
  }
  resize(dact_, z.expert_rows() * z.I);
  resize(dgate_up_, z.expert_rows() * 2 * z.I);
  ep_a_ = ActTensor(d, dt, z.expert_rows() * z.C);
  ep_b_ = ActTensor(d, dt, z.expert_rows() * z.C);
  ep_counts_out_ = Buffer<float>(d, MemSpace::Device, act, z.E);
  ep_counts_in_ = Buffer<float>(d, MemSpace::Device, act, z.E);
}

// Expert parallelism needs the tokens per expert on the host, to size its all-to-all: the offsets
// are read back and the host waits for the routing (the one wait of a sparse layer's forward there).
void MoeBlock::read_counts(Slot& s) {
  host_offsets_.resize(size_t(E_) + 1);
  device_.copy(host_offsets_.data(), s.offsets.data(), host_offsets_.size() * sizeof(int32_t), device_.compute());
  device_.synchronize(device_.compute());
  for (int e = 0; e < E_; ++e) s.count[size_t(e)] = host_offsets_[size_t(e) + 1] - host_offsets_[size_t(e)];
}

void MoeBlock::forward(int layer, int slot, void* out, const void* x, const MoeWeights& wt, int N) {
  Slot& s = slots_[size_t(slot)];
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_);
  const void* experts = wt.experts;
  const bool fp32_router = wt.fp32_router && ops_.dtype() != DType::F32;
  if (fp32_router)
    ops_.matmul_fp32_forward(static_cast<float*>(logits_.data()), x, static_cast<const float*>(wt.router),
                             router_scratch_.data(), N, C_, E_, WeightLayout::OutputMajor);
  else
    ops_.matmul_forward(logits_.data(), x, wt.router, nullptr, N, C_, E_, WeightLayout::OutputMajor);
  ops_.moe_route(s.probs.data(), s.experts.data(), s.weights.data(), logits_.data(), N, E_, K_, shape_.renormalises(),
                 fp32_router);
  ops_.moe_group(s.offsets.data(), s.token.data(), s.row.data(), s.experts.data(), N, E_, K_);
  ops_.moe_route_stats(stats(layer), s.probs.data(), s.experts.data(), padding_, padding_ ? rows_T_ : N, N, E_, K_);
  const int R = N * K_;
  ops_.moe_gather(rows_.data(), x, s.token.data(), R, C_);
  if (group_.size == 1) {
    experts_forward(s, experts, s.offsets.data(), E_, R, rows_.data(), s.y.data());
  } else {
    read_counts(s);
    exchange_counts(s);
    dispatch(s, rows_.data(), s.ep_rows.data());
    experts_forward(s, experts, s.ep_offsets.data(), E_ / group_.size, s.ep_received, s.ep_rows.data(),
                    ep_a_.data());
    combine_back(s, ep_a_.data(), s.y.data());
  }
  ops_.moe_combine(out, s.y.data(), s.weights.data(), s.row.data(), N, K_, C_);
  if (S_ > 0) {  // the shared expert, over every token, added after the routed ones
    const auto* shared = static_cast<const char*>(wt.shared);
    constexpr WeightLayout om = WeightLayout::OutputMajor;
    ops_.matmul_forward(s.shared_gate_up.data(), x, shared, nullptr, N, C_, 2 * S_, om);
    ops_.swiglu_forward(s.shared_act.data(), s.shared_gate_up.data(), N, S_);
    ops_.matmul_forward(s.shared_y.data(), s.shared_act.data(), shared + 2 * size_t(S_) * C * esz, nullptr, N, S_, C_,
                        om);
    ops_.matmul_forward(s.shared_gate.data(), x, wt.shared_gate, nullptr, N, C_, 1, om);
    ops_.moe_gate_add(out, s.shared_y.data(), s.shared_gate.data(), N, C_);
  }
}

void MoeBlock::end_forward() {
  if (enabled_) ops_.moe_aux_accumulate(step_stats_.data(), stats_.data(), sparse_layers_, E_);
}

void MoeBlock::take_step_stats_into(double* host) {
  if (!enabled_) return;
  device_.copy(host, step_stats_.data(), 2 * sizeof(double), device_.compute());
  device_.fill_zero(step_stats_.data(), 2 * sizeof(double), device_.compute());
}

// The last forward's aux loss and largest load, as end_forward adds them, read back.
std::array<double, 2> MoeBlock::read_last() const {
  device_.fill_zero(last_stats_.data(), 2 * sizeof(double), device_.compute());
  ops_.moe_aux_accumulate(last_stats_.data(), stats_.data(), sparse_layers_, E_);
  std::array<double, 2> host{};
  device_.copy(host.data(), last_stats_.data(), 2 * sizeof(double), device_.compute());
  device_.synchronize(device_.compute());
  return host;
}

double MoeBlock::aux_loss() const { return enabled_ ? read_last()[0] : std::numeric_limits<double>::quiet_NaN(); }

double MoeBlock::max_load() const { return enabled_ ? read_last()[1] : 0.0; }

void MoeBlock::backward(int slot, void* dx, const MoeGrads& g, const void* dout, const void* x, const MoeWeights& wt,
                        int N) {
  Slot& s = slots_[size_t(slot)];
  const void* experts = wt.experts;
  void* dexperts = g.experts;
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_);
  const int R = N * K_;
  ops_.moe_combine_backward(dy_.data(), dweights_.data(), dout, s.y.data(), s.weights.data(), s.row.data(), N, K_, C_);
  if (group_.size == 1) {
    ops_.moe_gather(rows_.data(), x, s.token.data(), R, C_);
    experts_backward(s, experts, dexperts, s.offsets.data(), E_, R, rows_.data(), dy_.data(), drows_.data());
  } else {
    dispatch(s, dy_.data(), ep_b_.data());
    experts_backward(s, experts, dexperts, s.ep_offsets.data(), E_ / group_.size, s.ep_received, s.ep_rows.data(),
                     ep_b_.data(), ep_a_.data());
    combine_back(s, ep_a_.data(), drows_.data());
  }
  ops_.moe_scatter(dx, drows_.data(), s.row.data(), N, K_, C_, GradInto::Overwrite);

  // The router: its weights' gradient through the top-k weights, and the load-balancing loss's
  // d aux / d probs[n, e] = E · f_e / tokens, the same for every token of every sparse layer.
  const float* daux = nullptr;
  if (shape_.moe.output_router_logits && aux_scale_ != 0.0f) {
    ops_.moe_aux_grad(daux_.data(), stats_.data(), sparse_layers_, E_, aux_scale_);
    daux = daux_.data();
  }
  constexpr WeightLayout om = WeightLayout::OutputMajor;
  constexpr GradInto add = GradInto::Accumulate, set = GradInto::Overwrite;
  const bool fp32_router = wt.fp32_router && ops_.dtype() != DType::F32;
  const size_t lsz = fp32_router ? sizeof(float) : esz;
  ops_.moe_route_backward(logits_.data(), dweights_.data(), s.probs.data(), s.experts.data(), daux, N, E_, K_,
                          shape_.renormalises(), fp32_router);
  // Padding gets no gradient from a loss it is not part of (nor from any other); fp32 logits are
  // zeroed as twice as many 16-bit elements.
  if (daux && padding_) ops_.moe_zero_padding(logits_.data(), padding_, rows_B_, rows_T_, E_ * int(lsz / esz));
  if (fp32_router)
    ops_.matmul_fp32_backward(dx, static_cast<float*>(g.router), static_cast<const float*>(logits_.data()), x,
                              static_cast<const float*>(wt.router), router_scratch_.data(), N, C_, E_, om, add);
  else
    ops_.matmul_backward(dx, g.router, nullptr, logits_.data(), x, wt.router, N, C_, E_, om, add);
  if (S_ > 0) {
    const size_t down = 2 * size_t(S_) * C * esz;
    const auto* shared = static_cast<const char*>(wt.shared);
    auto* dshared = static_cast<char*>(g.shared);
    ops_.moe_gate_add_backward(dshared_y_.data(), dshared_gate_.data(), dout, s.shared_y.data(), s.shared_gate.data(),
                               N, C_);
    ops_.matmul_backward(dshared_act_.data(), dshared ? dshared + down : nullptr, nullptr, dshared_y_.data(),
                         s.shared_act.data(), shared + down, N, S_, C_, om, set);
    ops_.swiglu_backward(dshared_gate_up_.data(), s.shared_gate_up.data(), dshared_act_.data(), N, S_, set);
    ops_.matmul_backward(dx, dshared, nullptr, dshared_gate_up_.data(), x, shared, N, C_, 2 * S_, om, add);
    ops_.matmul_backward(dx, g.shared_gate, nullptr, dshared_gate_.data(), x, wt.shared_gate, N, C_, 1, om, add);
  }
}

// Each projection of every expert as one grouped GEMM; an expert without rows computes nothing,
// and its gradient stays as it was (zero this step).
void MoeBlock::experts_forward(Slot& s, const void* weights, const int32_t* offsets, int experts, int R,
                               const void* rows, void* y) {
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_), I = size_t(I_), stride = 3 * I * C;
  const auto* w = static_cast<const char*>(weights);
  ops_.moe_expert_forward(s.gate_up.data(), rows, w, stride, offsets, experts, R, C_, 2 * I_);
  ops_.swiglu_forward(s.act.data(), s.gate_up.data(), R, I_);
  ops_.moe_expert_forward(y, s.act.data(), w + 2 * I * C * esz, stride, offsets, experts, R, I_, C_);
}

void MoeBlock::experts_backward(Slot& s, const void* weights, void* grads, const int32_t* offsets, int experts, int R,
                                const void* rows, const void* dy, void* drows) {
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_), I = size_t(I_), stride = 3 * I * C;
  const auto* w = static_cast<const char*>(weights);
  auto* dw = static_cast<char*>(grads);
  ops_.moe_expert_backward(dact_.data(), dw ? dw + 2 * I * C * esz : nullptr, dy, s.act.data(), w + 2 * I * C * esz,
                           stride, offsets, experts, R, I_, C_, GradInto::Overwrite);
  ops_.swiglu_backward(dgate_up_.data(), s.gate_up.data(), dact_.data(), R, I_, GradInto::Overwrite);
  ops_.moe_expert_backward(drows, dw, dgate_up_.data(), rows, w, stride, offsets, experts, R, C_, 2 * I_,
                           GradInto::Overwrite);
}

// Expert parallelism. A rank's routed rows are grouped by expert in index order, so the rows for
// the group's q-th rank (experts [q·E/G, (q+1)·E/G)) lie side by side, q by q: one piece each.
// The all-to-all delivers each rank's pieces in rank order; the owner reorders them expert by
// expert (rank order within an expert) to run each expert once, and back before returning them.
void MoeBlock::exchange_counts(Slot& s) {
  const int G = group_.size, own = E_ / G;
  std::vector<float> out(static_cast<size_t>(E_)), in(static_cast<size_t>(E_));
  for (int e = 0; e < E_; ++e) out[size_t(e)] = float(s.count[size_t(e)]);
  device_.copy(ep_counts_out_.data(), out.data(), out.size() * sizeof(float), device_.compute());
  const std::vector<size_t> pieces(static_cast<size_t>(G), static_cast<size_t>(own));
  group_.all_to_all(ep_counts_out_.data(), pieces, ep_counts_in_.data(), pieces, DType::F32);
  device_.copy(in.data(), ep_counts_in_.data(), in.size() * sizeof(float), device_.compute());
  device_.synchronize(device_.compute());
  s.ep_count.assign(size_t(E_), 0);  // [q · own + j]: rows rank q routes to own expert j
  for (int e = 0; e < E_; ++e) s.ep_count[size_t(e)] = int(in[size_t(e)]);

  // ep_from[r]: the received row (rank order) that is row r expert by expert; ep_to its inverse.
  std::vector<size_t> received_at(static_cast<size_t>(E_) + 1, 0);  // start of (q, j) in what arrives
  for (int i = 0; i < E_; ++i) received_at[size_t(i) + 1] = received_at[size_t(i)] + size_t(s.ep_count[size_t(i)]);
  const size_t rows = received_at[size_t(E_)];
  host_from_.resize(rows);
  host_to_.resize(rows);
  size_t r = 0;
  for (int j = 0; j < own; ++j)
    for (int q = 0; q < G; ++q)
      for (int k = 0; k < s.ep_count[size_t(q * own + j)]; ++k, ++r) {
        host_from_[r] = int32_t(received_at[size_t(q * own + j)] + size_t(k));
        host_to_[size_t(host_from_[r])] = int32_t(r);
      }
  const std::vector<int> counts = own_counts(s);
  host_offsets_.assign(size_t(own) + 1, 0);
  for (int j = 0; j < own; ++j) host_offsets_[size_t(j) + 1] = host_offsets_[size_t(j)] + counts[size_t(j)];
  s.ep_received = int(rows);
  device_.copy(s.ep_from.data(), host_from_.data(), rows * sizeof(int32_t), device_.compute());
  device_.copy(s.ep_to.data(), host_to_.data(), rows * sizeof(int32_t), device_.compute());
  device_.copy(s.ep_offsets.data(), host_offsets_.data(), host_offsets_.size() * sizeof(int32_t), device_.compute());
  device_.synchronize(device_.compute());  // the host vectors are reused
}

std::vector<int> MoeBlock::own_counts(const Slot& s) const {
  const int G = group_.size, own = E_ / G;
  std::vector<int> counts(static_cast<size_t>(own), 0);
  for (int q = 0; q < G; ++q)
    for (int j = 0; j < own; ++j) counts[size_t(j)] += s.ep_count[size_t(q * own + j)];
  return counts;
}

void MoeBlock::dispatch(Slot& s, const void* rows, void* out) {
  const int G = group_.size, own = E_ / G;
  send_counts_.assign(size_t(G), 0);
  recv_counts_.assign(size_t(G), 0);
  for (int q = 0; q < G; ++q)
    for (int j = 0; j < own; ++j) {
      send_counts_[size_t(q)] += size_t(s.count[size_t(q * own + j)]) * size_t(C_);
      recv_counts_[size_t(q)] += size_t(s.ep_count[size_t(q * own + j)]) * size_t(C_);
    }
  group_.all_to_all(rows, send_counts_, ep_a_.data(), recv_counts_, ops_.dtype());
  const size_t received = std::accumulate(recv_counts_.begin(), recv_counts_.end(), size_t(0)) / size_t(C_);
  ops_.moe_gather(out, ep_a_.data(), s.ep_from.data(), int(received), C_);
}

void MoeBlock::combine_back(Slot& s, const void* in, void* rows) {
  const size_t received = std::accumulate(recv_counts_.begin(), recv_counts_.end(), size_t(0)) / size_t(C_);
  ops_.moe_gather(ep_b_.data(), in, s.ep_to.data(), int(received), C_);
  group_.all_to_all(ep_b_.data(), recv_counts_, rows, send_counts_, ops_.dtype());
}

}  // namespace zt
