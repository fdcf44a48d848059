// Node topology through hwloc: what collx_info reports (and, later, which ranks share a node,
// NUMA domain or GPU); and the CPU's maker, which picks the measured defaults (select.cc).
#pragma once

#include <cstdint>
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

// Who made this node's CPU (cpuid's vendor string on x86; kOther elsewhere). The processes of
// one node run on one CPU, so all see the same.
enum class CpuMaker : uint8_t { kOther, kAmd, kIntel };
CpuMaker cpu_maker();
const char* cpu_maker_name(CpuMaker m);  // "AMD", "Intel", "other"

}  // namespace collx
