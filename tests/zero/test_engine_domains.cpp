// Multi-rank (run under mpirun): a second sharding domain. The groups of domain 1 are held by
// groups of ranks (the world split by rank % P), each group of ranks its own values: they are
// sharded, reduced and gathered over their group only, while the others are sharded over the
// world. Checked against one process holding every group's values, and the memory per rank.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "core/ledger.hpp"
#include "kernels/backend.hpp"
#include "mpi_world.hpp"
#include "self_communicator.hpp"
#include "zero/engine.hpp"

using namespace zt;
using namespace zt::test;

namespace {

struct GroupDef {
  std::string name;
  std::vector<std::vector<size_t>> shapes;
  int domain;
};

// a and c over the world; b and d held per group of ranks. Sizes 40, 36, 33, 42: no shard even.
const std::vector<GroupDef> kGroups = {
    {"a", {{7, 5}, {5}}, 0}, {"b", {{9, 4}}, 1}, {"c", {{3, 11}}, 0}, {"d", {{6, 6}, {6}}, 1}};

void add_group(ParamLayout& layout, const std::string& name, const std::vector<std::vector<size_t>>& shapes,
               int domain) {
  ParamGroup& g = layout.groups.emplace_back();
  g.name = name;
  g.offset = layout.total;
  g.domain = domain;
  for (size_t k = 0; k < shapes.size(); ++k) {
    TensorSpec t;
    t.name = name + "." + std::to_string(k);
    t.offset = layout.total;
    t.shape = shapes[k];
    t.weight_decay = shapes[k].size() >= 2;
    layout.total += t.numel();
    g.size += t.numel();
    g.tensors.push_back(t);
  }
}

// What one rank of a group of ranks (`place`) holds: every group once.
ParamLayout rank_layout() {
  ParamLayout layout;
  for (const GroupDef& g : kGroups) add_group(layout, g.name, g.shapes, g.domain);
  return layout;
}

// The reference's: the world's groups once and each place's copy of the others, all in domain 0.
struct Copy {
  size_t def;  // in kGroups
  int place;   // -1: the world's
};
ParamLayout reference_layout(int places, std::vector<Copy>& copies) {
  ParamLayout layout;
  for (size_t i = 0; i < kGroups.size(); ++i)
    for (int p = 0; p < (kGroups[i].domain ? places : 1); ++p) {
      add_group(layout, kGroups[i].name + "#" + std::to_string(p), kGroups[i].shapes, 0);
      copies.push_back({i, kGroups[i].domain ? p : -1});
    }
  return layout;
}

float initial(size_t def, int place, size_t j) {
  return 0.5f * std::sin(0.31f * float(j) + float(def) + 2.1f * float(place));
}
float gradient(size_t def, int rank, int step, size_t j) {
  return std::sin(0.17f * float(j) + 1.3f * float(rank) + 0.7f * float(step) + 0.4f * float(def));
}

EngineOptions options(int stage) {
  EngineOptions o;
  o.stage = stage;
  o.gradient_clipping = 2.0;  // the norm is about 5: clipped
  o.weight_decay = 0.1;
  o.reduce_bucket_size = 25;  // buckets that cut groups
  o.allgather_bucket_size = 29;
  o.prefetch_bucket_size = 50;
  o.param_persistence_threshold = 0;
  return o;
}

struct Run {
  std::vector<std::vector<float>> params;  // per group of the layout, after the steps
  std::vector<double> norms;
};

// `steps` steps of an engine over `layout`; gradients(group, step, values) gives each group's.
template <typename Grads>
Run run(Engine& engine, const ParamLayout& layout, int steps, Grads&& gradients) {
  Run r;
  for (int s = 1; s <= steps; ++s) {
    engine.begin_micro_batch();
    for (size_t g = 0; g < layout.groups.size(); ++g) {
      engine.fetch(int(g));
      engine.release(int(g));
    }
    for (size_t g = layout.groups.size(); g-- > 0;) {
      engine.fetch(int(g));
      View v = engine.grads(int(g));
      std::vector<float> values(layout.groups[g].size);
      gradients(g, s, values);
      std::memcpy(v.data, values.data(), values.size() * sizeof(float));
      engine.grads_ready(int(g));
      engine.release(int(g));
    }
    r.norms.push_back(engine.step(1e-2, 0.9, 0.95).grad_norm);
  }
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const ConstView v = engine.fetch(int(g));
    const float* f = static_cast<const float*>(v.data);
    r.params.emplace_back(f, f + layout.groups[g].size);
    engine.release(int(g));
  }
  return r;
}

}  // namespace

TEST_CASE("a second sharding domain: each group of ranks trains its own values, sharded and reduced among them",
          "[engine][domains]") {
  Communicator& comm = world();
  const int W = comm.world_size(), me = comm.rank();
  constexpr int kSteps = 3;
  for (int places = 1; places <= W; ++places) {
    if (W % places) continue;
    const int place = me % places, M = W / places;
    std::unique_ptr<Communicator> group = comm.split(place, me);
    const ParamLayout layout = rank_layout();
    std::vector<Copy> copies;
    const ParamLayout whole = reference_layout(places, copies);
    // The reference's gradients: the world's mean, and each place's groups' sum over its ranks over W.
    auto mean_gradient = [&](const Copy& c, int step, std::vector<float>& out) {
      std::fill(out.begin(), out.end(), 0.0f);
      for (int r = 0; r < W; ++r)
        if (c.place < 0 || r % places == c.place)
          for (size_t j = 0; j < out.size(); ++j) out[j] += gradient(c.def, r, step, j) / float(W);
    };
    for (int stage = 0; stage <= 3; ++stage) {
      INFO("stage " << stage << ", " << places << " groups of " << M << " ranks");
      const auto before = MemoryLedger::instance().stats();
      Engine engine(options(stage), layout, comm, cpu_backend(), cpu_backend().vector,
                    [&](float* dst, size_t begin, size_t count) {
                      for (size_t i = 0; i < layout.groups.size(); ++i) {
                        const ParamGroup& g = layout.groups[i];
                        const int p = g.domain ? place : -1;
                        for (size_t k = begin; k < begin + count; ++k)
                          if (k >= g.offset && k < g.offset + g.size) dst[k - begin] = initial(i, p, k - g.offset);
                      }
                    },
                    group.get());
      const auto after = MemoryLedger::instance().stats();
      // Model states per rank: the world's groups over W ranks, the others over the M of a group.
      const size_t P0 = Partition(40 + 33, W, 0).padded(), P1 = Partition(36 + 42, M, 0).padded();
      const size_t held0 = stage < 3 ? P0 : P0 / size_t(W), held1 = stage < 3 ? P1 : P1 / size_t(M);
      const size_t grads0 = stage < 2 ? P0 : P0 / size_t(W), grads1 = stage < 2 ? P1 : P1 / size_t(M);
      const size_t opt0 = stage < 1 ? P0 : P0 / size_t(W), opt1 = stage < 1 ? P1 : P1 / size_t(M);
      auto delta = [&](MemCategory k) { return after.cur(k) - before.cur(k); };
      CHECK(delta(MemCategory::Params) == 4 * (held0 + held1));
      CHECK(delta(MemCategory::Grads) == 4 * (grads0 + grads1));
      CHECK(delta(MemCategory::Optimizer) == 8 * (opt0 + opt1));
      // The plan says the same, and writes the second domain's terms with Ψ' and M.
      const EnginePlan plan = Engine::plan(options(stage), 73, 73, W, 0, {78, 78, M});
      CHECK(plan.params == delta(MemCategory::Params));
      CHECK(plan.grads == delta(MemCategory::Grads));
      CHECK(plan.optimizer == delta(MemCategory::Optimizer));
      CHECK(plan.step_values == delta(MemCategory::Activations));  // both domains' norm partials
      CHECK(plan.formula == Engine::plan(options(stage), 73, 73, W, 0).formula + " + " +
                                std::string(stage == 0   ? "16Ψ'"
                                            : stage == 1 ? "8Ψ' + 8Ψ'/M"
                                            : stage == 2 ? "4Ψ' + 12Ψ'/M"
                                                         : "16Ψ'/M"));
      // What reads every group's trainable space at once says it cannot, before any collective.
      CHECK_THROWS_WITH(engine.held(), Catch::Contains("not supported with a second sharding domain"));

      const Run got = run(engine, layout, kSteps, [&](size_t g, int step, std::vector<float>& out) {
        for (size_t j = 0; j < out.size(); ++j) out[j] = gradient(g, me, step, j);
      });
      SelfCommunicator self;
      Engine reference(options(0), whole, self, cpu_backend(), cpu_backend().vector,
                       [&](float* dst, size_t begin, size_t count) {
                         for (size_t i = 0; i < whole.groups.size(); ++i) {
                           const ParamGroup& g = whole.groups[i];
                           for (size_t k = begin; k < begin + count; ++k)
                             if (k >= g.offset && k < g.offset + g.size)
                               dst[k - begin] = initial(copies[i].def, copies[i].place, k - g.offset);
                         }
                       });
      const Run want = run(reference, whole, kSteps, [&](size_t g, int step, std::vector<float>& out) {
        mean_gradient(copies[g], step, out);
      });
      for (size_t s = 0; s < size_t(kSteps); ++s)
        CHECK(std::abs(got.norms[s] - want.norms[s]) <= 1e-6 * want.norms[s]);
      for (size_t g = 0; g < layout.groups.size(); ++g) {
        size_t w = 0;
        while (!(copies[w].def == g && (copies[w].place < 0 || copies[w].place == place))) ++w;
        REQUIRE(got.params[g].size() == want.params[w].size());
        double worst = 0;
        for (size_t j = 0; j < want.params[w].size(); ++j)
          worst = std::max(worst, double(std::abs(got.params[g][j] - want.params[w][j])));
        INFO("group " << layout.groups[g].name);
        CHECK(worst <= 1e-5);  // a step moves them by about 1e-2
      }
    }
    comm.control().barrier();
  }
}
