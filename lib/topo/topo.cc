#include "topo/topo.h"

#include <hwloc.h>

#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace collx {

TopoSummary topo_summary() {
  TopoSummary s;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    s.error = "hwloc_topology_init failed";
    return s;
  }
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo) != 0) {
    s.error = "hwloc_topology_load failed";
    hwloc_topology_destroy(topo);
    return s;
  }
  s.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  s.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  s.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o != nullptr;
       o = hwloc_get_next_pcidev(topo, o)) {
    const unsigned cls = o->attr->pcidev.class_id >> 8;  // 0x03: display controller
    const unsigned vendor = o->attr->pcidev.vendor_id;
    if (cls == 0x03 && (vendor == 0x10de || vendor == 0x1002 || vendor == 0x8086)) ++s.gpus;
  }
  hwloc_topology_destroy(topo);
  return s;
}

CpuMaker cpu_maker() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return CpuMaker::kOther;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);  // the vendor string is in ebx, edx, ecx
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  if (std::strcmp(vendor, "AuthenticAMD") == 0) return CpuMaker::kAmd;
  if (std::strcmp(vendor, "GenuineIntel") == 0) return CpuMaker::kIntel;
#endif
  return CpuMaker::kOther;
}

const char* cpu_maker_name(CpuMaker m) {
  switch (m) {
    case CpuMaker::kAmd: return "AMD";
    case CpuMaker::kIntel: return "Intel";
    case CpuMaker::kOther: break;
  }
  return "other";
}

}  // namespace collx
