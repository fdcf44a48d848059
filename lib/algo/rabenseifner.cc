// Rabenseifner: reduce-scatter by recursive vector halving, then allgather by recursive vector
// doubling. Step k of the reduce-scatter exchanges half of the range still in play with the
// rank 2^k away, nearest first, and the allgather retraces the steps farthest first (Open
// MPI's order; MPICH starts the reduce-scatter with the farthest rank). The volume is the
// same either way, but with ranks numbered node by node (c per node, c a power of two) the
// steps between nodes are the ones that move the smallest ranges: each rank sends 1/c of what
// the farthest-first order sends across nodes (counted in test_algorithms.cc).
// The block ranges are those of halving_step and doubling_step for w = bit_reverse(v), v the
// rank after the fold: v ends the reduce-scatter owning block w.
// Cost: 2 lg p·α + 2n(p−1)/p·β + n(p−1)/p·γ, plus one fold exchange before and one after for a
// non-power-of-two p. Best for medium messages. Each block is reduced by one rank only and
// then copied, so every rank ends bitwise identical.
#include "algo/algo.h"
#include "algo/rank_math.h"
#include "memory/host_copy.h"

namespace collx {

Status allreduce_rabenseifner(const AllreduceArgs& a) {
  Transport& t = a.t;
  const int p = t.size(), r = t.rank();
  const size_t es = a.red.elem_size;
  const size_t bytes = a.count * es;
  const Fold f = fold(r, p);
  const int q = f.q, steps = log2_exact(q);
  const uint32_t unfold_step = 1 + 2 * steps;
  uint8_t* tmp = nullptr;
  COLLX_TRY(a.scratch.get(bytes, &tmp));

  const uint8_t* cur = a.send;
  bool sat_out = false;
  COLLX_TRY(fold_in(a, f, unfold_step, tmp, &cur, &sat_out));
  if (sat_out) return Status();
  const int w = bit_reverse(f.new_rank, steps);

  // Reduce-scatter: ends owning block w (of q blocks) fully reduced.
  for (int k = 0; k < steps; ++k) {
    const HalvingStep hs = halving_step(w, q, k);  // hs.partner: w ^ q/2^(k+1), so v ^ 2^k
    const int peer = unfold(bit_reverse(hs.partner, steps), p);
    const Range keep = blocks(a.count, q, hs.keep_lo, hs.keep_hi);
    const Range give = blocks(a.count, q, hs.send_lo, hs.send_hi);
    Handle h = 0;
    if (keep.len > 0) COLLX_TRY(t.irecv(peer, 1 + k, tmp, keep.len * es, &h));
    if (give.len > 0) COLLX_TRY(t.isend(peer, 1 + k, cur + give.begin * es, give.len * es));
    if (keep.len > 0) {
      COLLX_TRY(t.wait(h));
      uint8_t* dst = a.recv + keep.begin * es;
      const uint8_t* mine = cur + keep.begin * es;
      if (w < hs.partner) {
        a.red(dst, mine, tmp, keep.len);
      } else {
        a.red(dst, tmp, mine, keep.len);
      }
    }
    cur = a.recv;  // the kept range now lives in recv; later steps only touch subranges of it
  }
  if (steps == 0 && cur != a.recv) copy_cached(a.recv, cur, bytes);
  const Range own = blocks(a.count, q, w, w + 1);  // no send above reads it: it was always kept
  finish(a, a.recv + own.begin * es, own.len);
  COLLX_TRY(t.wait_all());  // the allgather overwrites ranges the sends above read

  // Allgather: exchange ever larger ranges of finished blocks, straight into recv.
  for (int k = 0; k < steps; ++k) {
    const DoublingStep ds = doubling_step(w, k);  // ds.partner: w ^ 2^k, so v ^ q/2^(k+1)
    const int peer = unfold(bit_reverse(ds.partner, steps), p);
    const Range mine = blocks(a.count, q, ds.mine_lo, ds.mine_lo + ds.len);
    const Range theirs = blocks(a.count, q, ds.theirs_lo, ds.theirs_lo + ds.len);
    const uint32_t step = 1 + steps + k;
    if (theirs.len > 0) COLLX_TRY(t.irecv(peer, step, a.recv + theirs.begin * es, theirs.len * es));
    if (mine.len > 0) COLLX_TRY(t.isend(peer, step, a.recv + mine.begin * es, mine.len * es));
    COLLX_TRY(t.wait_all());
  }
  return fold_out(a, f, unfold_step);
}

}  // namespace collx
