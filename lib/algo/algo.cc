#include "algo/algo.h"

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
    case Algo::kCudaIpcOneShot:
    case Algo::kCudaIpcTwoShot:
    case Algo::kCudaIpcFlags:
    case Algo::kStaged:
    case Algo::kCount: break;
  }
  return error(COLLX_ERR_INTERNAL, "no allreduce algorithm %d", static_cast<int>(algo));
}

}  // namespace collx
