// Node topology through hwloc: what collx_info reports (and, later, which ranks share a node,
// NUMA domain or GPU).
#pragma once

#include <string>

namespace collx {

struct TopoSummary {
  int cores = 0;
  int pus = 0;
  int numa_nodes = 0;
  int gpus = 0;  // PCI display/3D controllers of NVIDIA, AMD or Intel seen by hwloc
  std::string error;  // non-empty if hwloc failed
};

TopoSummary topo_summary();

}  // namespace collx
