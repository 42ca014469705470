#include "model/moe_block.hpp"

#include <algorithm>
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
    return (tokens * E + tokens * K) * sizeof(float) + (2 * tokens * K + routed) * sizeof(int32_t) +
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
    return ep > 1 ? expert_rows() * (C * esz + 2 * sizeof(int32_t)) : 0;
  }
};

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
  return kept + z.scratch_bytes(esz);
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
  layer_count_.assign(size_t(shape.n_layer), {});
  layer_prob_.assign(size_t(shape.n_layer), {});
  layer_tokens_.assign(size_t(shape.n_layer), 0);
}

const char* MoeBlock::expert(const void* experts, int e) const {
  return static_cast<const char*>(experts) + size_t(e) * 3 * size_t(I_) * size_t(C_) * dtype_size(ops_.dtype());
}

char* MoeBlock::expert(void* experts, int e) const {
  return static_cast<char*>(experts) + size_t(e) * 3 * size_t(I_) * size_t(C_) * dtype_size(ops_.dtype());
}

void MoeBlock::set_rows(const RowSegments* rows, int B, int T) {
  padding_.clear();
  if (!rows) return;
  for (int b = 0; b < B; ++b)
    if (rows->padding_from(b) < T) padding_.emplace_back(b * T + rows->padding_from(b), (b + 1) * T);
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
  }
  resize(dact_, z.expert_rows() * z.I);
  resize(dgate_up_, z.expert_rows() * 2 * z.I);
  ep_a_ = ActTensor(d, dt, z.expert_rows() * z.C);
  ep_b_ = ActTensor(d, dt, z.expert_rows() * z.C);
  ep_counts_out_ = Buffer<float>(d, MemSpace::Device, act, z.E);
  ep_counts_in_ = Buffer<float>(d, MemSpace::Device, act, z.E);
}

// The rows of each expert side by side, experts in index order and tokens in order within each.
// The tokens per expert are the row counts of its GEMMs, which the host passes to the matmul (and
// they place each expert's rows): the routing is read back here and the host waits for it, on a
// GPU a device-to-host copy behind the router's kernels (what the device queued before them has
// to finish too; nothing after them is queued yet).
void MoeBlock::group(Slot& s, int N) {
  const size_t NK = size_t(N) * size_t(K_);
  host_experts_.resize(NK);
  device_.copy(host_experts_.data(), s.experts.data(), NK * sizeof(int32_t), device_.compute());
  device_.synchronize(device_.compute());
  std::fill(s.count.begin(), s.count.end(), 0);
  for (int32_t e : host_experts_) s.count[size_t(e)]++;
  std::vector<size_t> next(size_t(E_), 0);
  for (int e = 1; e < E_; ++e) next[size_t(e)] = next[size_t(e - 1)] + size_t(s.count[size_t(e - 1)]);
  host_token_.resize(NK);
  host_row_.resize(NK);
  for (size_t i = 0; i < NK; ++i) {
    const size_t r = next[size_t(host_experts_[i])]++;
    host_token_[r] = int32_t(i / size_t(K_));
    host_row_[i] = int32_t(r);
  }
  device_.copy(s.token.data(), host_token_.data(), NK * sizeof(int32_t), device_.compute());
  device_.copy(s.row.data(), host_row_.data(), NK * sizeof(int32_t), device_.compute());
  device_.synchronize(device_.compute());  // the host vectors are reused
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
  // The probabilities for the load-balancing loss read with the routing, in the same wait: read
  // after the experts, the host would wait for their GEMMs too, with nothing queued behind them.
  host_probs_.resize(size_t(N) * size_t(E_));
  device_.copy(host_probs_.data(), s.probs.data(), host_probs_.size() * sizeof(float), device_.compute());
  group(s, N);
  const int R = N * K_;
  ops_.moe_gather(rows_.data(), x, s.token.data(), R, C_);
  if (group_.size == 1) {
    experts_forward(s, experts, 0, s.count, rows_.data(), s.y.data());
  } else {
    exchange_counts(s);
    dispatch(s, rows_.data(), s.ep_rows.data());
    const int own = E_ / group_.size;
    experts_forward(s, experts, group_.index * own, own_counts(s), s.ep_rows.data(), ep_a_.data());
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

  // What the load-balancing loss needs of this layer, of the tokens that are not padding.
  std::vector<double>& count = layer_count_[size_t(layer)];
  std::vector<double>& prob = layer_prob_[size_t(layer)];
  count.assign(size_t(E_), 0.0);
  prob.assign(size_t(E_), 0.0);
  int tokens = 0;
  auto add_tokens = [&](int first, int end) {
    for (int n = first; n < end; ++n) {
      for (int j = 0; j < K_; ++j) count[size_t(host_experts_[size_t(n) * size_t(K_) + size_t(j)])] += 1;
      for (int e = 0; e < E_; ++e) prob[size_t(e)] += host_probs_[size_t(n) * size_t(E_) + size_t(e)];
    }
    tokens += end - first;
  };
  int next = 0;
  for (auto [first, end] : padding_) {
    add_tokens(next, std::min(first, N));
    next = end;
  }
  add_tokens(std::min(next, N), N);
  layer_tokens_[size_t(layer)] = tokens;
}

double MoeBlock::aux_loss() const {
  if (!enabled_) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> count(size_t(E_), 0.0), prob(size_t(E_), 0.0);
  double tokens = 0;
  for (int l = 0; l < shape_.n_layer; ++l) {
    if (!shape_.sparse(l) || layer_count_[size_t(l)].empty()) continue;
    for (int e = 0; e < E_; ++e) {
      count[size_t(e)] += layer_count_[size_t(l)][size_t(e)];
      prob[size_t(e)] += layer_prob_[size_t(l)][size_t(e)];
    }
    tokens += layer_tokens_[size_t(l)];
  }
  if (tokens == 0) return 0.0;
  double sum = 0;
  for (int e = 0; e < E_; ++e) sum += (count[size_t(e)] / tokens) * (prob[size_t(e)] / tokens);
  return double(E_) * sum;
}

double MoeBlock::max_load() const {
  double most = 0;
  for (int l = 0; l < shape_.n_layer; ++l) {
    if (!shape_.sparse(l) || layer_count_[size_t(l)].empty()) continue;
    const std::vector<double>& count = layer_count_[size_t(l)];
    double total = 0, busiest = 0;
    for (double c : count) {
      total += c;
      busiest = std::max(busiest, c);
    }
    if (total > 0) most = std::max(most, busiest / (total / double(E_)));
  }
  return most;
}

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
    experts_backward(s, experts, dexperts, 0, s.count, rows_.data(), dy_.data(), drows_.data());
  } else {
    dispatch(s, dy_.data(), ep_b_.data());
    const int own = E_ / group_.size;
    experts_backward(s, experts, dexperts, group_.index * own, own_counts(s), s.ep_rows.data(), ep_b_.data(),
                     ep_a_.data());
    combine_back(s, ep_a_.data(), drows_.data());
  }
  ops_.moe_scatter(dx, drows_.data(), s.row.data(), N, K_, C_, GradInto::Overwrite);

  // The router: its weights' gradient through the top-k weights, and the load-balancing loss's
  // d aux / d probs[n, e] = E · f_e / tokens, the same for every token of every sparse layer.
  const float* daux = nullptr;
  if (shape_.moe.output_router_logits && aux_scale_ != 0.0f) {
    std::vector<double> count(size_t(E_), 0.0);
    double tokens = 0;
    for (int l = 0; l < shape_.n_layer; ++l) {
      if (!shape_.sparse(l) || layer_count_[size_t(l)].empty()) continue;
      for (int e = 0; e < E_; ++e) count[size_t(e)] += layer_count_[size_t(l)][size_t(e)];
      tokens += layer_tokens_[size_t(l)];
    }
    std::vector<float> host(static_cast<size_t>(E_));
    for (int e = 0; e < E_; ++e)
      host[size_t(e)] = float(double(aux_scale_) * double(E_) * (count[size_t(e)] / tokens) / tokens);
    device_.copy(daux_.data(), host.data(), host.size() * sizeof(float), device_.compute());
    device_.synchronize(device_.compute());
    daux = daux_.data();
  }
  constexpr WeightLayout om = WeightLayout::OutputMajor;
  constexpr GradInto add = GradInto::Accumulate, set = GradInto::Overwrite;
  const bool fp32_router = wt.fp32_router && ops_.dtype() != DType::F32;
  const size_t lsz = fp32_router ? sizeof(float) : esz;
  ops_.moe_route_backward(logits_.data(), dweights_.data(), s.probs.data(), s.experts.data(), daux, N, E_, K_,
                          shape_.renormalises(), fp32_router);
  if (daux)  // padding gets no gradient from a loss it is not part of (nor from any other)
    for (auto [first, end] : padding_)
      device_.fill_zero(static_cast<char*>(logits_.data()) + size_t(first) * size_t(E_) * lsz,
                        size_t(end - first) * size_t(E_) * lsz, device_.compute());
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

void MoeBlock::experts_forward(Slot& s, const void* experts, int first_expert, const std::vector<int>& counts,
                               const void* rows, void* y) {
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_), I = size_t(I_);
  size_t first = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    const int n = counts[j];
    if (n == 0) continue;  // an expert without tokens computes nothing
    const char* w = expert(experts, first_expert + int(j));
    auto* gu = static_cast<char*>(s.gate_up.data()) + first * 2 * I * esz;
    auto* h = static_cast<char*>(s.act.data()) + first * I * esz;
    ops_.matmul_forward(gu, static_cast<const char*>(rows) + first * C * esz, w, nullptr, n, C_, 2 * I_,
                        WeightLayout::OutputMajor);
    ops_.swiglu_forward(h, gu, n, I_);
    ops_.matmul_forward(static_cast<char*>(y) + first * C * esz, h, w + 2 * I * C * esz, nullptr, n, I_, C_,
                        WeightLayout::OutputMajor);
    first += size_t(n);
  }
}

void MoeBlock::experts_backward(Slot& s, const void* experts, void* dexperts, int first_expert,
                                const std::vector<int>& counts, const void* rows, const void* dy, void* drows) {
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_), I = size_t(I_);
  size_t first = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    const int n = counts[j];
    if (n == 0) continue;  // no token, no gradient: the expert's stays as it was (zero this step)
    const char* w = expert(experts, first_expert + int(j));
    char* dw = dexperts ? expert(dexperts, first_expert + int(j)) : nullptr;
    auto in = [&](const void* t, size_t width) { return static_cast<const char*>(t) + first * width * esz; };
    auto out = [&](void* t, size_t width) { return static_cast<char*>(t) + first * width * esz; };
    ops_.matmul_backward(out(dact_.data(), I), dw ? dw + 2 * I * C * esz : nullptr, nullptr, in(dy, C),
                         in(s.act.data(), I), w + 2 * I * C * esz, n, I_, C_, WeightLayout::OutputMajor,
                         GradInto::Overwrite);
    ops_.swiglu_backward(out(dgate_up_.data(), 2 * I), in(s.gate_up.data(), 2 * I), in(dact_.data(), I), n, I_,
                         GradInto::Overwrite);
    ops_.matmul_backward(out(drows, C), dw, nullptr, in(dgate_up_.data(), 2 * I), in(rows, C), w, n, C_, 2 * I_,
                         WeightLayout::OutputMajor, GradInto::Overwrite);
    first += size_t(n);
  }
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
  device_.copy(s.ep_from.data(), host_from_.data(), rows * sizeof(int32_t), device_.compute());
  device_.copy(s.ep_to.data(), host_to_.data(), rows * sizeof(int32_t), device_.compute());
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
