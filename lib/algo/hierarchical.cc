// hierarchical: ranks on N nodes, at least 2 on one of them. Shared memory within each
// node, the network only between nodes. With c ranks on the node that has fewest (c may be 1):
//
// 1. within each node, a reduce-scatter through its shared memory: local rank l < c ends
//    with block l (of c) of its node's sum, reduced in local rank order; local ranks from c
//    on (on nodes with more) only contribute;
// 2. between nodes, the ranks with local rank l < c (one per node: c groups of N ranks, each
//    over the network at once) allreduce block l with the point-to-point algorithm that the
//    defaults for N ranks pick for its size (recursive doubling, Rabenseifner or ring);
// 3. within each node, an allgather of the c blocks through the shared memory.
//
// Between nodes each rank of a group moves the cost of an allreduce of n/c bytes over N
// ranks (ring: 2(N-1) messages, 2(n/c)(N-1)/N bytes), so a node sends 2n(N-1)/N in all, the
// flat ring's and Rabenseifner's volume in lg N or 2(N-1) network steps instead of lg p or
// 2(p-1), while the copies and reductions within the node are the shared-memory two-shot's.
//
// Where every node has c ranks and they together send at most kWholeMax bytes (n * c:
// latency-bound), step 1 is the shared-memory one-shot instead (every local rank gets the
// node's sum) and step 2 allreduces the whole message in every group; there is no step 3.
// That saves a synchronisation within the node for c times the bytes between nodes; beyond
// kWholeMax the bytes would cost more than the synchronisation. Every group holds the same
// inputs (the nodes' sums) in the same order (nodes by their lowest rank) and runs the same
// algorithm, so every rank gets the same bits.
//
// Results are bitwise identical on all ranks and reproducible for a fixed placement, but
// the order of reduction differs from a flat algorithm's (node sums, then across nodes).
#include "algo/algo.h"
#include "algo/rank_math.h"
#include "memory/host_copy.h"
#include "transport/shm.h"

namespace collx {

namespace {

// Not timed across nodes (one machine): 16 KiB cross a 100 Gb/s link in about 1.3 us, the
// order of a synchronisation through shared memory.
constexpr size_t kWholeMax = 16 << 10;

// Step 2: `count` elements of `buf`, in place, over the ranks with this local rank.
Status allreduce_across(const AllreduceArgs& a, uint8_t* buf, size_t count) {
  Transport& t = *a.hier->across;
  t.begin_nested(a.t);
  const AllreduceArgs g{t, a.red, buf, buf, count, a.scratch, a.segment_bytes};
  return t.end_op(run_allreduce(a.hier->table->pick(count * a.red.elem_size), g));
}

}  // namespace

Status allreduce_hierarchical(const AllreduceArgs& a) {
  const Hierarchy& h = *a.hier;
  const size_t elem = a.red.elem_size;
  AllreduceArgs node = a;
  node.shm = h.node;
  if (h.even && a.count * elem * static_cast<size_t>(h.owners) <= kWholeMax) {
    COLLX_TRY(allreduce_shm_one_shot(node));
    return allreduce_across(a, a.recv, a.count);
  }
  if (h.node != nullptr) {
    COLLX_TRY(shm_reduce_scatter(node, h.owners));
  } else if (a.send != a.recv) {  // alone on its node: its input is its node's sum
    copy_cached(a.recv, a.send, a.count * elem);
  }
  if (h.across != nullptr) {
    const Range mine =
        block(a.count, static_cast<size_t>(h.owners), static_cast<size_t>(h.local_rank));
    if (mine.len > 0) COLLX_TRY(allreduce_across(a, a.recv + mine.begin * elem, mine.len));
  }
  return h.node != nullptr ? shm_allgather(node, h.owners) : Status();
}

}  // namespace collx
