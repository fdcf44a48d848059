#include <catch2/catch.hpp>

#include <set>
#include <utility>
#include <vector>

#include "algo/rank_math.h"
#include "topo/node.h"

using namespace collx;

TEST_CASE("pow2_floor and log2_exact") {
  CHECK(pow2_floor(1) == 1);
  CHECK(pow2_floor(2) == 2);
  CHECK(pow2_floor(3) == 2);
  CHECK(pow2_floor(9) == 8);
  CHECK(pow2_floor(1024) == 1024);
  CHECK(log2_exact(1) == 0);
  CHECK(log2_exact(8) == 3);
}

TEST_CASE("fold maps p ranks onto a power of two, and unfold inverts it") {
  for (int p = 1; p <= 70; ++p) {
    const int q = pow2_floor(p);
    std::set<int> new_ranks;
    for (int r = 0; r < p; ++r) {
      const Fold f = fold(r, p);
      CHECK(f.q == q);
      if (f.partner >= 0) {
        CHECK(fold(f.partner, p).partner == r);  // pairs are mutual
        CHECK(fold(f.partner, p).active != f.active);
        CHECK(std::abs(f.partner - r) == 1);
      }
      if (f.active) {
        CHECK(f.new_rank >= 0);
        CHECK(f.new_rank < q);
        CHECK(unfold(f.new_rank, p) == r);
        new_ranks.insert(f.new_rank);
      }
    }
    CHECK(static_cast<int>(new_ranks.size()) == q);
  }
}

TEST_CASE("blocks partition any count") {
  for (size_t count : {0ul, 1ul, 2ul, 7ul, 8ul, 9ul, 1000ul, 1048583ul}) {
    for (size_t n = 1; n <= 17; ++n) {
      size_t next = 0;
      for (size_t i = 0; i < n; ++i) {
        const Range b = block(count, n, i);
        CHECK(b.begin == next);
        CHECK(b.len >= count / n);
        CHECK(b.len <= count / n + 1);
        next = b.begin + b.len;
      }
      CHECK(next == count);
      const Range all = blocks(count, n, 0, n);
      CHECK(all.begin == 0);
      CHECK(all.len == count);
    }
  }
}

TEST_CASE("recursive halving: partners agree, kept ranges nest and end at the own block") {
  for (int q = 1; q <= 64; q *= 2) {
    const int steps = log2_exact(q);
    for (int v = 0; v < q; ++v) {
      int lo = 0, hi = q;
      for (int k = 0; k < steps; ++k) {
        const HalvingStep s = halving_step(v, q, k);
        const HalvingStep t = halving_step(s.partner, q, k);
        CHECK(t.partner == v);
        // What v keeps the partner sends, and the other way round.
        CHECK(t.send_lo == s.keep_lo);
        CHECK(t.send_hi == s.keep_hi);
        CHECK(t.keep_lo == s.send_lo);
        CHECK(s.keep_lo >= lo);
        CHECK(s.keep_hi <= hi);
        CHECK(s.keep_hi - s.keep_lo == (hi - lo) / 2);
        lo = s.keep_lo;
        hi = s.keep_hi;
      }
      CHECK(lo == v);
      CHECK(hi == v + 1);
    }
  }
}

TEST_CASE("bit_reverse: an involution; through it the halving partner is nearest first") {
  for (int bits = 0; bits <= 6; ++bits) {
    const int q = 1 << bits;
    for (int v = 0; v < q; ++v) {
      const int w = bit_reverse(v, bits);
      CHECK(w < q);
      CHECK(bit_reverse(w, bits) == v);
      // Rabenseifner's steps, seen from the rank after the fold (v): step k's reduce-scatter
      // partner is 2^k away, the allgather's q/2^(k+1).
      for (int k = 0; k < bits; ++k) {
        CHECK(bit_reverse(halving_step(w, q, k).partner, bits) == (v ^ (1 << k)));
        CHECK(bit_reverse(doubling_step(w, k).partner, bits) == (v ^ (q >> (k + 1))));
      }
    }
  }
  CHECK(bit_reverse(0b0011, 4) == 0b1100);
  CHECK(bit_reverse(0b0110, 3) == 0b0011);
}

TEST_CASE("recursive doubling allgather: ranges grow from the own block to everything") {
  for (int q = 1; q <= 64; q *= 2) {
    for (int v = 0; v < q; ++v) {
      int lo = v, len = 1;
      for (int k = 0; k < log2_exact(q); ++k) {
        const DoublingStep s = doubling_step(v, k);
        CHECK(s.mine_lo == lo);
        CHECK(s.len == len);
        CHECK(doubling_step(s.partner, k).theirs_lo == s.mine_lo);
        lo = std::min(s.mine_lo, s.theirs_lo);
        len *= 2;
      }
      CHECK(lo == 0);
      CHECK(len == q);
    }
  }
}

TEST_CASE("ring: what r sends in a step is what r+1 receives; r ends owning block r+1") {
  for (int p = 1; p <= 17; ++p) {
    for (int r = 0; r < p; ++r) {
      const int right = mod(r + 1, p);
      std::set<int> rs_recv, ag_recv;
      for (int s = 0; s + 1 < p; ++s) {
        CHECK(ring_rs_send_block(r, s, p) == ring_rs_recv_block(right, s, p));
        CHECK(ring_ag_send_block(r, s, p) == ring_ag_recv_block(right, s, p));
        if (s + 1 < p - 1) CHECK(ring_rs_recv_block(r, s, p) == ring_rs_send_block(r, s + 1, p));
        rs_recv.insert(ring_rs_recv_block(r, s, p));
        ag_recv.insert(ring_ag_recv_block(r, s, p));
      }
      if (p > 1) {
        CHECK(ring_rs_recv_block(r, p - 2, p) == mod(r + 1, p));  // final reduced block
        CHECK(ag_recv.count(mod(r + 1, p)) == 0);                // ... is never overwritten
        CHECK(static_cast<int>(ag_recv.size()) == p - 1);
        CHECK(static_cast<int>(rs_recv.size()) == p - 1);
      }
    }
  }
}

namespace {

// (block, ranks) of each of a layout's groups.
std::vector<std::pair<int, std::vector<int>>> groups_of(const NodeLayout& l) {
  std::vector<std::pair<int, std::vector<int>>> g;
  for (const NodeLayout::Group& x : l.groups) g.emplace_back(x.block, x.ranks);
  return g;
}

}  // namespace

TEST_CASE("node_layout: local ranks, groups across nodes, uneven nodes") {
  // Round-robin over nodes numbered 7 and 3: node 7 holds ranks 0, 2, 4 and is node 0.
  const std::vector<uint64_t> rr = {7, 3, 7, 3, 7, 3};
  const NodeLayout a = node_layout(rr, 3);
  CHECK(a.nodes == 2);
  CHECK(a.fewest == 3);
  CHECK(a.most == 3);
  CHECK(a.node_index == 1);
  CHECK(a.local_rank == 1);
  CHECK(a.local == std::vector<int>{1, 3, 5});
  CHECK(a.blocks == 3);
  CHECK(groups_of(a) == std::vector<std::pair<int, std::vector<int>>>{{1, {2, 3}}});
  // Every rank is in its node's list at its local rank. Every block has one owner on every
  // node, the rank of local rank b mod (the node's size), in the group of every member; a
  // rank's groups are exactly the blocks it owns, ascending, with it at its node's number.
  const std::vector<std::vector<uint64_t>> layouts = {
      rr, {1, 1, 2, 2, 3, 3}, {4, 5, 6, 6, 5, 4}, {1, 2, 2, 1, 2}, {9, 8, 8, 7, 7, 7},
      {0, 0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 1, 1, 2, 2}, {5, 4, 5, 4, 5, 4, 5, 4, 5}};
  for (const std::vector<uint64_t>& nodes : layouts) {
    const int p = static_cast<int>(nodes.size());
    std::vector<std::vector<int>> owners(static_cast<size_t>(node_layout(nodes, 0).blocks));
    for (int r = 0; r < p; ++r) {
      const NodeLayout l = node_layout(nodes, r);
      const int k = static_cast<int>(l.local.size());
      CHECK(l.local[static_cast<size_t>(l.local_rank)] == r);
      for (int q : l.local) CHECK(node_layout(nodes, q).local == l.local);
      std::vector<int> expect;
      for (int b = l.local_rank; b < l.blocks; b += k) expect.push_back(b);
      REQUIRE(l.groups.size() == expect.size());
      for (size_t i = 0; i < expect.size(); ++i) {
        const NodeLayout::Group& g = l.groups[i];
        CHECK(g.block == expect[i]);
        CHECK(static_cast<int>(g.ranks.size()) == l.nodes);
        CHECK(g.ranks[static_cast<size_t>(l.node_index)] == r);
        owners[static_cast<size_t>(g.block)].push_back(r);
        // Member j holds the group at its lane: the same block, members and lanes.
        REQUIRE(g.lanes.size() == g.ranks.size());
        for (size_t j = 0; j < g.ranks.size(); ++j) {
          const NodeLayout m = node_layout(nodes, g.ranks[j]);
          REQUIRE(g.lanes[j] < m.groups.size());
          const NodeLayout::Group& h = m.groups[g.lanes[j]];
          CHECK((h.block == g.block && h.ranks == g.ranks && h.lanes == g.lanes));
        }
      }
    }
    for (const std::vector<int>& o : owners) CHECK(static_cast<int>(o.size()) == node_layout(nodes, 0).nodes);
  }
  // The block count: one per rank on nodes of equal size; otherwise the count in 1 .. most
  // whose busiest owner reads least (ceil(B/k) * k / B of a message on a node of k).
  auto blocks = [](std::vector<uint64_t> nodes) { return node_layout(nodes, 0).blocks; };
  CHECK(blocks({0, 0, 0, 1, 1, 1}) == 3);
  CHECK(blocks({0, 0, 0, 0, 0, 0, 0, 0, 1}) == 8);  // 8 + 1: 1/8 each on the large node
  CHECK(blocks({0, 0, 0, 0, 0, 1, 1, 1, 1}) == 4);  // 5 + 4: 5 blocks would load one rank 2/5 x 4
  CHECK(blocks({0, 0, 0, 1, 1}) == 3);              // 3 + 2: 1 x 3/3 and 2 x 2/3, not 3/2
  CHECK(blocks({0, 0, 0, 0, 1, 1, 2, 2}) == 4);
  CHECK(blocks({0, 1, 1, 2, 2, 2}) == 3);
  CHECK(blocks({0, 0, 1, 2}) == 2);
  // A rank owns at most max_groups blocks (the transport's lanes): 8 + 1 with 4 gives 4
  // blocks (2 each on the node of 8), with 1 the smallest node's count.
  CHECK(node_layout({0, 0, 0, 0, 0, 0, 0, 0, 1}, 0, 4).blocks == 4);
  CHECK(node_layout({0, 0, 0, 0, 0, 0, 0, 0, 1}, 8, 4).groups.size() == 4);
  CHECK(node_layout({0, 0, 0, 1, 1}, 0, 1).blocks == 2);
  CHECK(node_layout({0, 0, 0, 0, 0, 0, 0, 0, 1}, 0, 1).blocks == 1);
  // Nodes of 2 and 1: both blocks' groups hold the rank alone on its node.
  CHECK(node_layout({1, 1, 2}, 1).fewest == 1);
  CHECK(node_layout({1, 1, 2}, 1).most == 2);
  CHECK(groups_of(node_layout({1, 1, 2}, 1)) ==
        std::vector<std::pair<int, std::vector<int>>>{{1, {1, 2}}});
  CHECK(groups_of(node_layout({1, 1, 2}, 2)) ==
        std::vector<std::pair<int, std::vector<int>>>{{0, {0, 2}}, {1, {1, 2}}});
  const NodeLayout one = node_layout({9, 9, 9}, 1);
  CHECK(one.nodes == 1);
  CHECK(one.fewest == 3);
  CHECK(groups_of(one) == std::vector<std::pair<int, std::vector<int>>>{{1, {1}}});
}
