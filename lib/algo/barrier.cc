// Dissemination barrier: in round k every rank sends an empty message to rank + 2^k and waits
// for one from rank − 2^k; after ⌈lg p⌉ rounds every rank has heard, indirectly, from every
// other. Cost: ⌈lg p⌉·α. Used when a communicator is created and destroyed.
#include "algo/algo.h"
#include "algo/rank_math.h"

namespace collx {

Status barrier(Transport& t) {
  const int p = t.size(), r = t.rank();
  uint32_t round = 0;
  for (int dist = 1; dist < p; dist *= 2, ++round) {
    Handle h;
    COLLX_TRY(t.irecv(mod(r - dist, p), round, nullptr, 0, &h));
    COLLX_TRY(t.isend(mod(r + dist, p), round, nullptr, 0));
    COLLX_TRY(t.wait_all());
  }
  return Status();
}

}  // namespace collx
