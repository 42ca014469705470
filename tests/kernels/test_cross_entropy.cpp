#include "kernels/cpu/cross_entropy.hpp"

#include "core/ignored_target.hpp"

#include "check.hpp"

using namespace zt::cpu;
using namespace zt::test;

namespace {

// Mean over rows of -log softmax(logits[n, :V])[target]; the padding columns are ignored.
double cross_entropy_ref(const VecD& logits, const std::vector<int32_t>& targets, int N, int V, int Vp) {
  double total = 0;
  for (int n = 0; n < N; n++) {
    const double* row = &logits[size_t(n) * Vp];
    double maxval = row[0];
    for (int v = 1; v < V; v++) maxval = std::max(maxval, row[v]);
    double sum = 0;
    for (int v = 0; v < V; v++) sum += std::exp(row[v] - maxval);
    total += maxval + std::log(sum) - row[targets[n]];
  }
  return total / N;
}

}  // namespace

TEST_CASE("cross_entropy forward and backward over a padded vocabulary", "[kernels][cross_entropy]") {
  const int N = 6, V = 11, Vp = 16;
  Vec logits = random_vec(size_t(N) * Vp, 81, 4.0f);
  // Huge padding logits would dominate any softmax that wrongly included them.
  for (int n = 0; n < N; n++)
    for (int v = V; v < Vp; v++) logits[size_t(n) * Vp + v] = 1000.0f;
  std::vector<int32_t> targets = {0, 10, 3, 3, 7, 1};
  Vec lse(N);
  float loss = cross_entropy_forward(lse.data(), logits.data(), targets.data(), N, V, Vp);
  const double want = cross_entropy_ref(to_double(logits), targets, N, V, Vp);
  REQUIRE(loss == Approx(want).epsilon(1e-6));

  const float scale = 0.75f / N;  // dloss / N
  Vec dlogits = random_vec(logits.size(), 82);  // backward overwrites
  cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), scale, N, V, Vp);
  // Finite differences of 0.75 · mean loss over every logit, padding included (gradient 0 there).
  VecD g = numeric_grad(
      [&](const VecD& v) { return VecD{0.75 * cross_entropy_ref(v, targets, N, V, Vp)}; }, to_double(logits), {1.0});
  require_close(dlogits, g, 1e-5, 1e-7);
  for (int n = 0; n < N; n++)
    for (int v = V; v < Vp; v++) REQUIRE(dlogits[size_t(n) * Vp + v] == 0.0f);

  SECTION("in place over the logits") {
    Vec inplace = logits;
    cross_entropy_backward(inplace.data(), inplace.data(), lse.data(), targets.data(), scale, N, V, Vp);
    REQUIRE(inplace == dlogits);
  }
}

TEST_CASE("cross_entropy stays finite for extreme logits", "[kernels][cross_entropy]") {
  const int N = 3, V = 200, Vp = 256;
  Vec logits = random_vec(size_t(N) * Vp, 91, 30.0f);
  logits[5] = 300.0f;  // row 0 has one dominant logit
  std::vector<int32_t> targets = {5, 199, 0};
  Vec lse(N);
  float loss = cross_entropy_forward(lse.data(), logits.data(), targets.data(), N, V, Vp);
  REQUIRE(std::isfinite(loss));
  REQUIRE(loss == Approx(cross_entropy_ref(to_double(logits), targets, N, V, Vp)).epsilon(1e-5));
  Vec d(logits.size());
  cross_entropy_backward(d.data(), logits.data(), lse.data(), targets.data(), 1.0f, N, V, Vp);
  for (int n = 0; n < N; n++) {
    double row_sum = 0;  // softmax - onehot sums to zero
    for (int v = 0; v < Vp; v++) {
      REQUIRE(std::isfinite(d[size_t(n) * Vp + v]));
      row_sum += d[size_t(n) * Vp + v];
    }
    REQUIRE(std::abs(row_sum) < 1e-5);
  }
  // Probabilities far below the others (logits 30 apart over 200 tokens reach exp(-200)) are
  // written as 0, never as subnormal numbers.
  for (float g : d) REQUIRE(std::fpclassify(g) != FP_SUBNORMAL);
}

TEST_CASE("cross_entropy leaves ignored targets out of the mean and their rows without gradient",
          "[kernels][cross_entropy][mask]") {
  const int N = 6, V = 11, Vp = 16;
  Vec logits = random_vec(size_t(N) * Vp, 83, 4.0f);
  for (int n = 0; n < N; n++)
    for (int v = V; v < Vp; v++) logits[size_t(n) * Vp + v] = 1000.0f;
  const std::vector<int32_t> targets = {0, zt::kIgnoredTarget, 3, zt::kIgnoredTarget, 7, 10};
  // The reference: the rows that count alone (PyTorch's ignore_index).
  std::vector<int32_t> kept_targets;
  VecD kept;
  for (int n = 0; n < N; n++) {
    if (targets[size_t(n)] == zt::kIgnoredTarget) continue;
    kept_targets.push_back(targets[size_t(n)]);
    kept.insert(kept.end(), logits.begin() + n * Vp, logits.begin() + (n + 1) * Vp);
  }
  const int counted = int(kept_targets.size());
  Vec lse(N);
  const float loss = cross_entropy_forward(lse.data(), logits.data(), targets.data(), N, V, Vp);
  REQUIRE(loss == Approx(cross_entropy_ref(kept, kept_targets, counted, V, Vp)).epsilon(1e-6));

  const float scale = 0.75f / float(counted);
  Vec dlogits = random_vec(logits.size(), 84);
  cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), scale, N, V, Vp);
  // Finite differences of 0.75 · (mean over the rows that count) over every logit: 0 in ignored rows.
  VecD g = numeric_grad(
      [&](const VecD& v) {
        VecD rows;
        for (int n = 0; n < N; n++)
          if (targets[size_t(n)] != zt::kIgnoredTarget)
            rows.insert(rows.end(), v.begin() + n * Vp, v.begin() + (n + 1) * Vp);
        return VecD{0.75 * cross_entropy_ref(rows, kept_targets, counted, V, Vp)};
      },
      to_double(logits), {1.0});
  require_close(dlogits, g, 1e-5, 1e-7);
  for (int v = 0; v < Vp; v++) {
    REQUIRE(dlogits[size_t(1) * Vp + v] == 0.0f);
    REQUIRE(dlogits[size_t(3) * Vp + v] == 0.0f);
  }
}

TEST_CASE("cross_entropy of rows that are all ignored is NaN with a zero gradient", "[kernels][cross_entropy][mask]") {
  const int N = 2, V = 5, Vp = 8;
  const Vec logits = random_vec(size_t(N) * Vp, 85);
  const std::vector<int32_t> targets(N, zt::kIgnoredTarget);
  Vec lse(N), d(logits.size(), 1.0f);
  REQUIRE(std::isnan(cross_entropy_forward(lse.data(), logits.data(), targets.data(), N, V, Vp)));
  cross_entropy_backward(d.data(), logits.data(), lse.data(), targets.data(), 1.0f, N, V, Vp);
  for (float x : d) REQUIRE(x == 0.0f);
}
