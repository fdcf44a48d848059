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

// The CPUs this node's ranks can run on, to tell whether they outnumber them: the online CPUs,
// fewer where the process's control group confines it to a set of CPUs (cgroup v2
// cpuset.cpus.effective, v1 cpuset.effective_cpus), as batch systems and containers do. Not
// the process's affinity: ranks bound to a core each would look crowded (as they would where a
// launcher gave each rank a CPU set of its own; a batch system's set is usually a whole job's
// or step's). Not a CPU quota either: it caps CPU time, not how many threads run at once (2
// ranks under a quota of 1 CPU of 2 ran slower as if crowded: docs/PERFORMANCE.md, "The CPUs
// counted"). Read once per process (the online CPUs, this once, where there is no memory to
// read the files with); 0: not known.
int usable_cpus();

// The same from its inputs: the online CPUs (<= 0: not known), the folder that holds the
// control groups (v2 at its top, v1 in a folder per controller, as /sys/fs/cgroup does) and
// the text of /proc/self/cgroup. A group's file that is missing is read from its nearest
// ancestor that has it (inside a container the process's path is the host's, and the
// container's own group is the top).
int usable_cpus(int online, const std::string& groups, const std::string& proc_cgroup);

// The number of CPUs in a list such as "0-3,8,10-11"; 0 if it is malformed.
int count_cpu_list(const std::string& list);

}  // namespace collx
