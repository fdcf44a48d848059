// Recursive doubling: in step k each rank exchanges its whole vector with the rank 2^k away
// and reduces, so after lg p steps every rank holds the full result.
// Cost: lg p·α + n·lg p·(β+γ); a non-power-of-two p first folds the extra ranks in (one more
// exchange before and after). Best for small messages, where α dominates.
// Every rank reduces with the lower group's data as the left operand, so all ranks evaluate
// the same expression tree and end bitwise identical.
#include "algo/algo.h"
#include "algo/rank_math.h"
#include "memory/host_copy.h"

namespace collx {

Status allreduce_recursive_doubling(const AllreduceArgs& a) {
  Transport& t = a.t;
  const int p = t.size(), r = t.rank();
  const size_t bytes = a.count * a.red.elem_size;
  const Fold f = fold(r, p);
  const int steps = log2_exact(f.q);
  const uint32_t unfold_step = 1 + steps;
  uint8_t* tmp = nullptr;
  COLLX_TRY(a.scratch.get(bytes, &tmp));

  const uint8_t* cur = a.send;
  bool sat_out = false;
  COLLX_TRY(fold_in(a, f, unfold_step, tmp, &cur, &sat_out));
  if (sat_out) return Status();
  for (int k = 0; k < steps; ++k) {
    const int v_peer = f.new_rank ^ (1 << k);
    const int peer = unfold(v_peer, p);
    COLLX_TRY(t.irecv(peer, 1 + k, tmp, bytes));
    COLLX_TRY(t.isend(peer, 1 + k, cur, bytes));
    COLLX_TRY(t.wait_all());  // the send may read recv, which the reduction overwrites
    if (f.new_rank < v_peer) {
      a.red(a.recv, cur, tmp, a.count);
    } else {
      a.red(a.recv, tmp, cur, a.count);
    }
    cur = a.recv;
  }
  if (cur != a.recv) copy_cached(a.recv, cur, bytes);  // only when no step ran
  finish(a, a.recv, a.count);  // every rank that took part divides all (the sat-out get it)
  return fold_out(a, f, unfold_step);
}

}  // namespace collx
