// Which ranks share a node (and so memory): a 64-bit identity of this node, equal for the
// processes of one machine boot and different elsewhere. From the hostname and the kernel's
// boot id, so that two containers with one hostname but separate kernels differ; COLLX_NODE
// replaces it (tests pretend ranks live on different nodes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace collx {

// 64-bit FNV-1a of `bytes` bytes, continuing from `h` (start from kFnvBasis). The node's
// identity below, and the bootstrap's hashes of settings and of the members' identities.
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
inline uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = kFnvBasis) {
  const auto* b = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

uint64_t node_id(const std::string& override_name);

// How a communicator's ranks sit on nodes, seen from one rank (`node_of[r]`: rank r's node
// id). Nodes are numbered by their lowest rank, so every rank numbers them alike.
//
// For the hierarchical allreduce a message is cut into `blocks` blocks; on a node of k ranks
// local rank l owns the blocks b with b mod k == l, and block b is allreduced across nodes by
// its owners, one per node (a "group"). `blocks` is the count in 1 .. most that minimises
// what the busiest owner reads to reduce its blocks, max over nodes of ceil(blocks/k) * k /
// blocks of a message (the smallest such count): nodes of equal size get one block per rank,
// and a large node beside a small one still spreads its reduction over all its ranks (8 + 1
// ranks: 8 blocks, the rank alone on its node owns all of them), within the `max_groups`
// blocks one rank may own (the transport's lanes, Transport::max_lanes).
struct NodeLayout {
  int nodes = 0;             // distinct nodes
  int fewest = 0;            // ranks on the node that has fewest
  int most = 0;              // and on the one that has most
  int local_rank = 0;        // this rank's index among its node's ranks
  std::vector<int> local;    // the ranks of this rank's node, ascending
  int node_index = 0;        // this rank's node's number
  int blocks = 0;            // see above
  struct Group {
    int block = 0;           // owned by this rank
    std::vector<int> ranks;  // its owner on every node, by node number (this rank is
                             // ranks[node_index])
    std::vector<uint32_t> lanes;  // which of its owner's blocks it is, on every node
  };
  std::vector<Group> groups;  // this rank's blocks, ascending (none if local_rank >= blocks)
};
NodeLayout node_layout(const std::vector<uint64_t>& node_of, int rank, int max_groups = 1 << 16);

// The most processes of this machine that one communicator of this process has had: a
// communicator of some of a machine's ranks, or of a node that COLLX_NODE pretends on it,
// shares the machine's CPUs with the others (its watch period counts them all:
// Comm::take_place). One per process (node_processes()).
class NodeProcesses {
 public:
  // Notes a communicator whose ranks on this machine run in processes `pids` (ranks that are
  // threads of one process repeat its pid); returns the most so far, this one's included.
  int note(std::vector<int64_t> pids);
  // Notes `processes` processes of this machine (the PMPI preload's count of MPI_COMM_WORLD's
  // at MPI_Init); returns the most so far.
  int note_processes(int processes);

 private:
  std::atomic<int> most_{0};
};
NodeProcesses& node_processes();

// Whether process `pid` can be read with process_vm_readv: reads 8 bytes at `address` and
// compares them with `expect`.
bool cma_readable(int64_t pid, uint64_t address, uint64_t expect);

}  // namespace collx
