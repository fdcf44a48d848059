// Which ranks share a node (and so memory): a 64-bit identity of this node, equal for the
// processes of one machine boot and different elsewhere. From the hostname and the kernel's
// boot id, so that two containers with one hostname but separate kernels differ; COLLX_NODE
// replaces it (tests pretend ranks live on different nodes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace collx {

uint64_t node_id(const std::string& override_name);

// How a communicator's ranks sit on nodes, seen from one rank (`node_of[r]`: rank r's node
// id). Nodes are numbered by their lowest rank, so every rank numbers them alike.
struct NodeLayout {
  int nodes = 0;             // distinct nodes
  int fewest = 0;            // ranks on the node that has fewest
  int most = 0;              // and on the one that has most
  int local_rank = 0;        // this rank's index among its node's ranks
  std::vector<int> local;    // the ranks of this rank's node, ascending
  std::vector<int> across;   // local_rank < fewest: the rank with this local rank on each node,
                             // by node number (this rank is across[its node's number]); else
                             // empty (no node lacks a rank of a local rank below fewest)
  int node_index = 0;        // this rank's node's number
};
NodeLayout node_layout(const std::vector<uint64_t>& node_of, int rank);

// Whether process `pid` can be read with process_vm_readv: reads 8 bytes at `address` and
// compares them with `expect`.
bool cma_readable(int64_t pid, uint64_t address, uint64_t expect);

}  // namespace collx
