#include "covering_array.h"

#include <numeric>
#include <utility>

#include "mix.h"
#include "suite_space.h"

namespace dcp {

std::vector<std::vector<int>> pairwise_rows(const std::vector<int>& sizes, uint64_t seed,
                                            const AllowedSpace* space) {
  const int n = static_cast<int>(sizes.size());
  auto allowed = [&](int i, int a, int j, int b) {
    return space == nullptr || space->allowed(i, a, j, b);
  };
  // uncovered[i][j][a * sizes[j] + b] for i < j: allowed and not yet in a row.
  std::vector<std::vector<std::vector<char>>> uncovered(static_cast<size_t>(n));
  int remaining = 0;
  for (int i = 0; i < n; ++i) {
    uncovered[i].resize(static_cast<size_t>(n));
    for (int j = i + 1; j < n; ++j) {
      uncovered[i][j].assign(static_cast<size_t>(sizes[i] * sizes[j]), 0);
      for (int a = 0; a < sizes[i]; ++a) {
        for (int b = 0; b < sizes[j]; ++b) {
          const bool open = allowed(i, a, j, b);
          uncovered[i][j][static_cast<size_t>(a * sizes[j] + b)] = open;
          remaining += open;
        }
      }
    }
  }
  auto is_new = [&](int i, int a, int j, int b) {
    if (i > j) std::swap(i, j), std::swap(a, b);
    return uncovered[i][j][static_cast<size_t>(a * sizes[j] + b)] != 0;
  };
  Rng rng(seed);
  std::vector<std::vector<int>> rows;
  while (remaining > 0) {
    std::vector<int> best;
    int best_gain = -1;
    struct Pair {
      int i, j, k;
    };
    std::vector<Pair> open;
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        for (int k = 0; k < sizes[i] * sizes[j]; ++k) {
          if (uncovered[i][j][static_cast<size_t>(k)]) open.push_back({i, j, k});
        }
      }
    }
    for (int trial = 0; trial < 24; ++trial) {
      // Seed the row with a random uncovered pair.
      const Pair p = open[static_cast<size_t>(rng.below(static_cast<int>(open.size())))];
      std::vector<int> row(static_cast<size_t>(n), -1);
      row[p.i] = p.k / sizes[p.j];
      row[p.j] = p.k % sizes[p.j];
      std::vector<int> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      for (int k = n - 1; k > 0; --k) std::swap(order[k], order[rng.below(k + 1)]);
      bool stuck = false;
      for (int ax : order) {
        if (row[ax] >= 0) continue;
        int best_v = -1, best_g = -1;
        for (int v = 0; v < sizes[ax]; ++v) {
          int g = 0;
          bool fits = true;
          for (int o = 0; o < n; ++o) {
            if (o == ax || row[o] < 0) continue;
            fits = fits && allowed(ax, v, o, row[o]);
            if (is_new(ax, v, o, row[o])) ++g;
          }
          if (!fits) continue;
          if (g > best_g || (g == best_g && rng.chance(0.5))) best_g = g, best_v = v;
        }
        if (best_v < 0) {
          stuck = true;
          break;
        }
        row[ax] = best_v;
      }
      if (stuck || (space != nullptr && !space->runnable(row))) {
        row = space->witness(p.i, p.k / sizes[p.j], p.j, p.k % sizes[p.j]);
      }
      int gain = 0;
      for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j) gain += is_new(i, row[i], j, row[j]) ? 1 : 0;
      }
      if (gain > best_gain) best_gain = gain, best = row;
    }
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        char& u = uncovered[i][j][static_cast<size_t>(best[i] * sizes[j] + best[j])];
        remaining -= u;
        u = 0;
      }
    }
    rows.push_back(best);
  }
  return rows;
}

}  // namespace dcp
