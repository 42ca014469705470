#pragma once
// The binomial broadcast tree over ranks relative to a root (vrank = (rank - root) mod N):
// a vrank's parent clears its lowest set bit; its children are vrank + 2^k for every 2^k below
// that bit (all 2^k < N for the root). Every non-root receives once; a rank sits popcount(vrank)
// hops below the root, so the depth is floor(log2 N).
#include <vector>

namespace zt {

struct BinomialTree {
  int parent = -1;            // real rank, -1 for the root
  std::vector<int> children;  // real ranks, in send order (largest subtree first)
};

inline BinomialTree binomial_tree(int rank, int root, int world_size) {
  BinomialTree tree;
  const int vrank = (rank - root + world_size) % world_size;
  int mask = 1;
  while (mask < world_size) {
    if (vrank & mask) {
      tree.parent = (vrank - mask + root) % world_size;
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vrank + mask < world_size) tree.children.push_back((vrank + mask + root) % world_size);
  return tree;
}

}  // namespace zt
