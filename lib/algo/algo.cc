#include "algo/algo.h"

namespace collx {

Status run_allreduce(Algo algo, const AllreduceArgs& a) {
  switch (algo) {
    case Algo::kRecursiveDoubling: return allreduce_recursive_doubling(a);
    case Algo::kRabenseifner: return allreduce_rabenseifner(a);
    case Algo::kRing: return allreduce_ring(a);
    case Algo::kCount: break;
  }
  return error(COLLX_ERR_INTERNAL, "no allreduce algorithm %d", static_cast<int>(algo));
}

}  // namespace collx
