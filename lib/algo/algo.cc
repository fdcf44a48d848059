#include "algo/algo.h"

#include "algo/rank_math.h"
#include "transport/shm.h"

namespace collx {

Status run_allreduce(Algo algo, const AllreduceArgs& a) {
  switch (algo) {
    case Algo::kRecursiveDoubling: return allreduce_recursive_doubling(a);
    case Algo::kRabenseifner: return allreduce_rabenseifner(a);
    case Algo::kRing: return allreduce_ring(a);
    case Algo::kShmOneShot:
    case Algo::kShmTwoShot:
    case Algo::kShmCma:
      if (a.shm == nullptr || (algo == Algo::kShmCma && !a.shm->peer_access())) {
        return error(COLLX_ERR_INTERNAL, "%s without shared memory", algo_name(algo));
      }
      if (algo == Algo::kShmCma) return allreduce_shm_cma(a);
      return algo == Algo::kShmOneShot ? allreduce_shm_one_shot(a) : allreduce_shm_two_shot(a);
    case Algo::kHierarchical:
      if (a.hier == nullptr) return error(COLLX_ERR_INTERNAL, "hierarchical without nodes");
      return allreduce_hierarchical(a);
    case Algo::kCudaIpcOneShot:
    case Algo::kCudaIpcTwoShot:
    case Algo::kCudaIpcFlags:
    case Algo::kStaged:
    case Algo::kStagedGpu:
    case Algo::kCount: break;
  }
  return error(COLLX_ERR_INTERNAL, "no allreduce algorithm %d", static_cast<int>(algo));
}

Status fold_in(const AllreduceArgs& a, const Fold& f, uint32_t unfold_step, uint8_t* tmp,
               const uint8_t** cur, bool* sat_out) {
  *sat_out = false;
  if (f.partner < 0) return Status();
  const size_t bytes = a.count * a.red.elem_size;
  if (!f.active) {
    COLLX_TRY(a.t.isend(f.partner, 0, a.send, bytes));
    COLLX_TRY(a.t.irecv(f.partner, unfold_step, a.recv, bytes));
    *sat_out = true;
    return a.t.wait_all();
  }
  Handle h;
  COLLX_TRY(a.t.irecv(f.partner, 0, tmp, bytes, &h));
  COLLX_TRY(a.t.wait(h));
  a.red(a.recv, tmp, a.send, a.count);  // the partner is the rank below
  *cur = a.recv;
  return Status();
}

Status fold_out(const AllreduceArgs& a, const Fold& f, uint32_t unfold_step) {
  if (f.partner < 0) return Status();
  COLLX_TRY(a.t.isend(f.partner, unfold_step, a.recv, a.count * a.red.elem_size));
  return a.t.wait_all();
}

}  // namespace collx
