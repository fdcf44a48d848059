// What a rank knows of each peer once the communicator is bootstrapped (core/bootstrap.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace collx {

struct PeerInfo {
  std::vector<uint8_t> address;  // UCX worker address
  uint64_t node = 0;             // topo/node.h: equal values share memory
  int64_t pid = 0;
  bool cma_ok = false;  // the peer could read the memory of every peer on its node
  std::string shm_name;  // rank 0: the node's shared-memory segment (unchecked)
};

}  // namespace collx
