#include "model/moe_block.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zt {

namespace {

// Elements of what one slot keeps and of the scratch, for B·T = n tokens.
struct MoeSizes {
  size_t tokens, routed, C, E, K, I, S;
  MoeSizes(const GptShape& s, int max_batch, int max_seq)
      : tokens(size_t(max_batch) * size_t(max_seq)),
        routed(tokens * size_t(s.moe.top_k)),
        C(size_t(s.d_model)),
        E(size_t(s.moe.num_experts)),
        K(size_t(s.moe.top_k)),
        I(size_t(s.expert_width())),
        S(size_t(s.moe.d_shared)) {}
  size_t shared_bytes(size_t esz) const { return S > 0 ? tokens * (3 * S + C + 1) * esz : 0; }
  size_t slot_bytes(size_t esz) const {
    return (tokens * E + tokens * K) * sizeof(float) + (2 * tokens * K + routed) * sizeof(int32_t) +
           routed * (3 * I + C) * esz + shared_bytes(esz);
  }
  size_t scratch_bytes(size_t esz) const {
    return (tokens * E + 3 * routed * C + routed * 3 * I) * esz + (tokens * K + E) * sizeof(float) +
           shared_bytes(esz);
  }
};

int sparse_slots(const GptShape& shape, int slots) {
  if (slots == 1) return 1;
  return shape.n_layer;  // indexed by layer; a dense layer's slot stays empty
}

}  // namespace

size_t MoeBlock::bytes(const GptShape& shape, int max_batch, int max_seq, int slots, const ModelOps& ops) {
  if (!shape.moe.enabled()) return 0;
  const MoeSizes z(shape, max_batch, max_seq);
  const size_t esz = dtype_size(ops.dtype());
  size_t kept = 0;
  if (slots == 1) {
    kept = z.slot_bytes(esz);
  } else {
    for (int l = 0; l < shape.n_layer; ++l) kept += shape.sparse(l) ? z.slot_bytes(esz) : 0;
  }
  return kept + z.scratch_bytes(esz);
}

MoeBlock::MoeBlock(const GptShape& shape, int max_batch, int max_seq, int slots, const Backend& backend)
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
  const MoeSizes z(shape, max_batch, max_seq);
  const DType dt = ops_.dtype();
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
  logits_ = ActTensor(d, dt, z.tokens * z.E);
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
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_), I = size_t(I_);
  const void* experts = wt.experts;
  ops_.matmul_forward(logits_.data(), x, wt.router, nullptr, N, C_, E_, WeightLayout::OutputMajor);
  ops_.moe_route(s.probs.data(), s.experts.data(), s.weights.data(), logits_.data(), N, E_, K_,
                 shape_.renormalises());
  // The probabilities for the load-balancing loss read with the routing, in the same wait: read
  // after the experts, the host would wait for their GEMMs too, with nothing queued behind them.
  host_probs_.resize(size_t(N) * size_t(E_));
  device_.copy(host_probs_.data(), s.probs.data(), host_probs_.size() * sizeof(float), device_.compute());
  group(s, N);
  const int R = N * K_;
  ops_.moe_gather(rows_.data(), x, s.token.data(), R, C_);
  size_t first = 0;
  for (int e = 0; e < E_; ++e) {
    const int n = s.count[size_t(e)];
    if (n == 0) continue;  // an expert without tokens computes nothing
    const char* w = expert(experts, e);
    auto* gu = static_cast<char*>(s.gate_up.data()) + first * 2 * I * esz;
    auto* h = static_cast<char*>(s.act.data()) + first * I * esz;
    ops_.matmul_forward(gu, static_cast<const char*>(rows_.data()) + first * C * esz, w, nullptr, n, C_, 2 * I_,
                        WeightLayout::OutputMajor);
    ops_.swiglu_forward(h, gu, n, I_);
    ops_.matmul_forward(static_cast<char*>(s.y.data()) + first * C * esz, h, w + 2 * I * C * esz, nullptr, n, I_, C_,
                        WeightLayout::OutputMajor);
    first += size_t(n);
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

  // What the load-balancing loss needs of this layer.
  std::vector<double>& count = layer_count_[size_t(layer)];
  std::vector<double>& prob = layer_prob_[size_t(layer)];
  count.assign(size_t(E_), 0.0);
  prob.assign(size_t(E_), 0.0);
  for (int e = 0; e < E_; ++e) count[size_t(e)] = s.count[size_t(e)];
  for (int n = 0; n < N; ++n)
    for (int e = 0; e < E_; ++e) prob[size_t(e)] += host_probs_[size_t(n) * size_t(E_) + size_t(e)];
  layer_tokens_[size_t(layer)] = N;
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
  const size_t esz = dtype_size(ops_.dtype()), C = size_t(C_), I = size_t(I_);
  const int R = N * K_;
  ops_.moe_combine_backward(dy_.data(), dweights_.data(), dout, s.y.data(), s.weights.data(), s.row.data(), N, K_, C_);
  ops_.moe_gather(rows_.data(), x, s.token.data(), R, C_);
  size_t first = 0;
  for (int e = 0; e < E_; ++e) {
    const int n = s.count[size_t(e)];
    if (n == 0) continue;  // no token, no gradient: the expert's stays as it was (zero this step)
    const char* w = expert(experts, e);
    char* dw = dexperts ? expert(dexperts, e) : nullptr;
    auto at = [&](ActTensor& t, size_t width) { return static_cast<char*>(t.data()) + first * width * esz; };
    ops_.matmul_backward(at(dact_, I), dw ? dw + 2 * I * C * esz : nullptr, nullptr, at(dy_, C), at(s.act, I),
                         w + 2 * I * C * esz, n, I_, C_, WeightLayout::OutputMajor, GradInto::Overwrite);
    ops_.swiglu_backward(at(dgate_up_, 2 * I), at(s.gate_up, 2 * I), at(dact_, I), n, I_, GradInto::Overwrite);
    ops_.matmul_backward(at(drows_, C), dw, nullptr, at(dgate_up_, 2 * I), at(rows_, C), w, n, C_, 2 * I_,
                         WeightLayout::OutputMajor, GradInto::Overwrite);
    first += size_t(n);
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
  ops_.moe_route_backward(logits_.data(), dweights_.data(), s.probs.data(), s.experts.data(), daux, N, E_, K_,
                          shape_.renormalises());
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

}  // namespace zt
