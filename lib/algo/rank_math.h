// Rank arithmetic of the allreduce algorithms: small pure functions, tested exhaustively.
#pragma once

#include <cstddef>

namespace collx {

// Largest power of two <= p (p >= 1).
inline int pow2_floor(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

inline int log2_exact(int q) {
  int k = 0;
  while ((1 << k) < q) ++k;
  return k;
}

// Fold of a non-power-of-two count p onto q = pow2_floor(p) ranks (MPICH's scheme): among the
// first 2*(p-q) ranks, each even rank hands its data to the odd rank above it and sits out;
// the remaining ranks are renumbered 0..q-1 in order.
struct Fold {
  int q = 1;           // ranks taking part after the fold
  bool active = true;  // this rank takes part in the power-of-two phase
  int new_rank = 0;    // its rank in 0..q-1 (when active)
  int partner = -1;    // the rank it exchanges with in the fold (-1: none)
};

inline Fold fold(int rank, int p) {
  Fold f;
  f.q = pow2_floor(p);
  const int extra = p - f.q;
  if (rank < 2 * extra) {
    f.active = (rank % 2) == 1;
    f.partner = f.active ? rank - 1 : rank + 1;
    f.new_rank = rank / 2;
  } else {
    f.new_rank = rank - extra;
  }
  return f;
}

// Real rank of new rank v after the fold.
inline int unfold(int v, int p) {
  const int extra = p - pow2_floor(p);
  return v < extra ? 2 * v + 1 : v + extra;
}

// Split `count` elements into `n` blocks, the first count % n blocks one element larger.
struct Range {
  size_t begin = 0;
  size_t len = 0;
};

inline Range block(size_t count, size_t n, size_t i) {
  const size_t base = count / n, extra = count % n;
  return Range{i * base + (i < extra ? i : extra), base + (i < extra ? 1 : 0)};
}

// Elements of blocks [lo, hi).
inline Range blocks(size_t count, size_t n, size_t lo, size_t hi) {
  const Range a = block(count, n, lo);
  const size_t end = hi >= n ? count : block(count, n, hi).begin;
  return Range{a.begin, end - a.begin};
}

// v with its lowest `bits` bits in reverse order (an involution). Rabenseifner runs the two
// functions below on w = bit_reverse(v): its partner at step k is then 2^k away in v, nearest
// first (see rabenseifner.cc).
inline int bit_reverse(int v, int bits) {
  int w = 0;
  for (int i = 0; i < bits; ++i) w |= ((v >> i) & 1) << (bits - 1 - i);
  return w;
}

// Recursive halving step k (0-based, k < log2 q) of new rank v among q ranks: the block range
// [lo, lo + 2*half) in play is split, v keeps the half on its side of the partner.
struct HalvingStep {
  int partner;
  int keep_lo, keep_hi;  // block indices kept (and reduced) by v
  int send_lo, send_hi;  // block indices sent to the partner
};

inline HalvingStep halving_step(int v, int q, int k) {
  const int half = q >> (k + 1);
  const int lo = v & ~(2 * half - 1);
  HalvingStep s;
  s.partner = v ^ half;
  if (v & half) {
    s.keep_lo = lo + half, s.keep_hi = lo + 2 * half, s.send_lo = lo, s.send_hi = lo + half;
  } else {
    s.keep_lo = lo, s.keep_hi = lo + half, s.send_lo = lo + half, s.send_hi = lo + 2 * half;
  }
  return s;
}

// Recursive doubling allgather step k of new rank v: v holds blocks [mine_lo, mine_lo + 2^k)
// and receives the partner's equally sized range.
struct DoublingStep {
  int partner;
  int mine_lo, theirs_lo, len;
};

inline DoublingStep doubling_step(int v, int k) {
  const int len = 1 << k;
  const int partner = v ^ len;
  return DoublingStep{partner, v & ~(len - 1), partner & ~(len - 1), len};
}

// Ring: in reduce-scatter step s (0..p-2) rank r sends block (r - s) and receives block
// (r - s - 1), mod p; it ends owning block (r + 1) mod p. In allgather step s it sends block
// (r + 1 - s) and receives block (r - s).
inline int mod(int a, int p) { return ((a % p) + p) % p; }
inline int ring_rs_send_block(int r, int s, int p) { return mod(r - s, p); }
inline int ring_rs_recv_block(int r, int s, int p) { return mod(r - s - 1, p); }
inline int ring_ag_send_block(int r, int s, int p) { return mod(r + 1 - s, p); }
inline int ring_ag_recv_block(int r, int s, int p) { return mod(r - s, p); }

}  // namespace collx
