#include "topo/topo.h"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
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

namespace {

bool read_text(const std::string& path, std::string* text) {
  std::ifstream f(path);
  if (!f) return false;
  std::ostringstream all;
  all << f.rdbuf();
  *text = all.str();
  return true;
}

// Calls f(folder) for the group `path` under `top`, then for each of its ancestors up to `top`
// itself, until f returns true.
template <typename F>
void up_from(const std::string& top, std::string path, F&& f) {
  while (!f(top + path)) {
    if (path.empty()) return;
    const size_t slash = path.find_last_of('/');  // "/a/b" -> "/a" -> ""
    path.erase(slash == std::string::npos ? 0 : slash);
  }
}

}  // namespace

int count_cpu_list(const std::string& list) {
  std::istringstream items(list);
  int n = 0;
  for (std::string item; std::getline(items, item, ',');) {
    unsigned first = 0, last = 0;
    char end = 0;
    if (std::sscanf(item.c_str(), "%u-%u %c", &first, &last, &end) == 2 && first <= last) {
      n += static_cast<int>(last - first + 1);
    } else if (std::sscanf(item.c_str(), "%u %c", &first, &end) == 1) {
      ++n;
    } else {
      return 0;
    }
  }
  return n;
}

int usable_cpus(int online, const std::string& groups, const std::string& proc_cgroup) {
  int cpus = std::max(online, 0);
  // The nearest group's CPU set (the kernel's effective one already reflects the ancestors').
  const auto set_in = [&](const std::string& top, const std::string& path, const char* file) {
    up_from(top, path, [&](const std::string& folder) {
      std::string text;
      if (!read_text(folder + "/" + file, &text)) return false;
      const int n = count_cpu_list(text);
      if (n > 0 && (cpus == 0 || n < cpus)) cpus = n;
      return true;
    });
  };
  std::istringstream lines(proc_cgroup);
  for (std::string line; std::getline(lines, line);) {  // "id:controllers:path"
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (path.rfind('/', 0) != 0 || path == "/") path.clear();  // the top (or not a path)
    if (controllers.empty()) {  // v2: every controller in one tree
      set_in(groups, path, "cpuset.cpus.effective");
      continue;
    }
    std::istringstream names(controllers);  // v1: a tree per controller (or per few)
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "cpuset") set_in(groups + "/cpuset", path, "cpuset.effective_cpus");
    }
  }
  return cpus;
}

int usable_cpus() {
  const auto online = [] { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); };
  try {
    static const int cpus = [online] {
      std::string proc_cgroup;
      (void)read_text("/proc/self/cgroup", &proc_cgroup);
      return usable_cpus(online(), "/sys/fs/cgroup", proc_cgroup);
    }();
    return cpus;
  } catch (const std::bad_alloc&) {
    return online();  // (no memory to read the files with: read again at the next call)
  }
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
