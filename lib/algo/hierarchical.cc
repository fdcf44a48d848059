// hierarchical: ranks on N nodes, at least 2 on one of them. Shared memory within each
// node, the network only between nodes. The message is cut into B blocks (NodeLayout: one per
// rank where nodes are of equal size); on a node of k ranks, local rank l owns the blocks b
// with b mod k == l:
//
// 1. within each node, a reduce-scatter through its shared memory: each block's owner ends
//    with that block of its node's sum, reduced in local rank order (a node's ranks from B on
//    own nothing and only contribute; a rank alone on its node owns every block);
// 2. between nodes, block b's owners (one per node: B groups of N ranks, over the network at
//    once) allreduce it with the point-to-point algorithm that the defaults for N ranks pick
//    for its size (recursive doubling, Rabenseifner or ring); a rank that owns several blocks
//    runs their groups one after the other, in block order;
// 3. within each node, an allgather of the blocks through the shared memory.
//
// Between nodes each group moves the cost of an allreduce of n/B bytes over N ranks (ring:
// 2(N-1) messages, 2(n/B)(N-1)/N bytes), so a node sends 2n(N-1)/N in all, the flat ring's and
// Rabenseifner's volume in lg N or 2(N-1) network steps instead of lg p or 2(p-1), while the
// copies and reductions within the node are the shared-memory two-shot's.
//
// Where every node has B ranks and they together send at most kWholeMax bytes (n * B:
// latency-bound), step 1 is the shared-memory one-shot instead (every local rank gets the
// node's sum) and step 2 allreduces the whole message in every group; there is no step 3.
// That saves a synchronisation within the node for B times the bytes between nodes; beyond
// kWholeMax the bytes would cost more than the synchronisation. Every group holds the same
// inputs (the nodes' sums) in the same order (nodes by their lowest rank) and runs the same
// algorithm, so every rank gets the same bits. Where some rank owns several blocks (nodes of
// different sizes), a message of at most kWholeMax bytes takes the three steps with one
// block instead, owned by local rank 0 of each node (block 0's group): no rank runs several
// groups in turn for a latency-bound message.
//
// A rank that owns several blocks sends the same steps in each of their groups, to different
// ranks, which may be threads of one process sharing a UCX worker; so each message also
// carries the sender's lane, which of its groups it belongs to (NodeLayout::Group::lanes,
// Request::lane_self), and no message of one group matches a receive of another. A group
// waits only on its own members, each of which has finished its lower blocks' groups first:
// the lowest unfinished block always completes, so the chain cannot deadlock.
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

// Step 2: `count` elements of `buf`, in place, over `across` (a block's owners).
Status allreduce_across(const AllreduceArgs& a, Transport& across, uint8_t* buf, size_t count) {
  across.begin_nested(a.t);
  AllreduceArgs g{across, a.red, buf, buf, count, a.scratch, a.segment_bytes};
  g.divisor = a.divisor;  // the step that finishes the sums
  const Algo algo = a.hier->table->pick(count * a.red.elem_size);
  if (a.hier->across_ran != nullptr) *a.hier->across_ran |= int64_t{1} << static_cast<int>(algo);
  return across.end_op(run_allreduce(algo, g));
}

}  // namespace

Status allreduce_hierarchical(const AllreduceArgs& a) {
  const Hierarchy& h = *a.hier;
  const size_t elem = a.red.elem_size;
  AllreduceArgs node = a;
  node.shm = h.node;
  node.divisor = 0;  // a node's sum is not the sum
  if (h.even && a.count * elem * static_cast<size_t>(h.blocks) <= kWholeMax) {
    COLLX_TRY(allreduce_shm_one_shot(node));
    return allreduce_across(a, *h.groups.front().across, a.recv, a.count);  // one block each
  }
  const int blocks = h.serial_groups && a.count * elem <= kWholeMax ? 1 : h.blocks;
  if (h.node != nullptr) {
    COLLX_TRY(shm_reduce_scatter(node, blocks));
  } else if (a.send != a.recv) {  // alone on its node: its input is its node's sum
    copy_cached(a.recv, a.send, a.count * elem);
  }
  for (const Hierarchy::Group& g : h.groups) {
    if (g.block >= blocks) break;
    const Range mine = block(a.count, static_cast<size_t>(blocks), static_cast<size_t>(g.block));
    if (mine.len > 0) COLLX_TRY(allreduce_across(a, *g.across, a.recv + mine.begin * elem, mine.len));
  }
  return h.node != nullptr ? shm_allgather(node, blocks) : Status();
}

}  // namespace collx
