#include "topo/topo.h"

#include <hwloc.h>

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

}  // namespace collx
