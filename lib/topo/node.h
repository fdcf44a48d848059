// Which ranks share a node (and so memory): a 64-bit identity of this node, equal for the
// processes of one machine boot and different elsewhere. From the hostname and the kernel's
// boot id, so that two containers with one hostname but separate kernels differ; COLLX_NODE
// replaces it (tests pretend ranks live on different nodes).
#pragma once

#include <cstdint>
#include <string>

namespace collx {

uint64_t node_id(const std::string& override_name);

// Whether process `pid` can be read with process_vm_readv: reads 8 bytes at `address` and
// compares them with `expect`.
bool cma_readable(int64_t pid, uint64_t address, uint64_t expect);

}  // namespace collx
