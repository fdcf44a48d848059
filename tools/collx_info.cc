// collx_info: what this libcollx is and sees — version, build options, UCX version and
// transports, hwloc topology, the selection table in force, the configuration table.
//   collx_info [--ranks N] [--nodes M] [--config] [--markdown-config]
// (--nodes: the number of nodes for the hierarchical allreduce's step between them; default 2)
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "collx_build_config.h"
#include "core/config.h"
#include "memory/cuda_driver.h"
#include "reduce/reduce.h"
#include "select/select.h"
#include "topo/topo.h"

namespace {

std::string ucx_transports() {
  std::set<std::string> names;
  uct_component_h* comps = nullptr;
  unsigned ncomps = 0;
  if (uct_query_components(&comps, &ncomps) != UCS_OK) return "(uct_query_components failed)";
  for (unsigned i = 0; i < ncomps; ++i) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(comps[i], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(comps[i], &attr) != UCS_OK) continue;
    for (const uct_md_resource_desc_t& d : mds) {
      uct_md_config_t* cfg = nullptr;
      uct_md_h md = nullptr;
      if (uct_md_config_read(comps[i], nullptr, nullptr, &cfg) != UCS_OK) continue;
      const ucs_status_t s = uct_md_open(comps[i], d.md_name, cfg, &md);
      uct_config_release(cfg);
      if (s != UCS_OK) continue;
      uct_tl_resource_desc_t* tls = nullptr;
      unsigned ntls = 0;
      if (uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK) {
        for (unsigned t = 0; t < ntls; ++t) {
          names.insert(std::string(tls[t].tl_name) + "/" + tls[t].dev_name);
        }
        uct_release_tl_resource_list(tls);
      }
      uct_md_close(md);
    }
  }
  uct_release_component_list(comps);
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

void print_config(bool markdown) {
  if (markdown) {
    std::printf("| variable | type | default | meaning |\n| --- | --- | --- | --- |\n");
  }
  for (const collx::ConfigRow* r = collx::config_rows(); r->name != nullptr; ++r) {
    if (markdown) {
      std::printf("| `%s` | %s | `%s` | %s |\n", r->name, r->type, r->default_value, r->doc);
    } else {
      std::printf("  %-22s %-8s default %-8s %s\n", r->name, r->type,
                  *r->default_value ? r->default_value : "\"\"", r->doc);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, nodes = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--ranks") && i + 1 < argc) {
      ranks = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--nodes") && i + 1 < argc) {
      nodes = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--config")) {
      print_config(false);
      return 0;
    } else if (!std::strcmp(argv[i], "--markdown-config")) {
      print_config(true);
      return 0;
    } else {
      std::fprintf(stderr, "usage: %s [--ranks N] [--nodes M] [--config] [--markdown-config]\n",
                   argv[0]);
      return 2;
    }
  }
  if (ranks < 1) ranks = 1;
  if (nodes < 2) nodes = 2;
  unsigned maj, min, rel;
  ucp_get_version(&maj, &min, &rel);
  std::printf("libcollx %s\n", COLLX_VERSION);
  std::printf("build:       %s, %s, CUDA %s\n", COLLX_BUILD_TYPE, COLLX_CXX,
              COLLX_HAVE_CUDA ? "compiled in" : "not built (host memory only)");
  std::string driver;
  const bool gpu = collx::cuda_memory_query(&driver) != nullptr;
  std::printf("GPU buffers: %s (%s)\n", driver.c_str(),
              gpu ? "device memory over CUDA IPC within a node, else staged through pinned "
                    "host memory; managed memory reduced in place"
                  : "host memory only");
  std::printf("UCX:         %u.%u.%u (library %s)\n", maj, min, rel, ucp_get_version_string());
  std::printf("transports:  %s\n", ucx_transports().c_str());
  const collx::TopoSummary t = collx::topo_summary();
  if (!t.error.empty()) {
    std::printf("topology:    %s\n", t.error.c_str());
  } else {
    std::printf("topology:    %d cores, %d hardware threads, %d NUMA node(s), %d GPU(s); "
                "%d CPUs to run on (online, within the control group's CPU set)\n",
                t.cores, t.pus, t.numa_nodes, t.gpus, collx::usable_cpus());
  }
  const collx::CpuMaker cpu = collx::cpu_maker();
  std::printf("CPU:         %s (the defaults within a node differ by maker); reduction "
              "kernels: %s%s\n",
              collx::cpu_maker_name(cpu), collx::simd_name(collx::best_simd()),
              collx::has_avx512_bf16() ? " (bfloat16 rounded by AVX-512 BF16)" : "");
  collx::Config config;
  collx::Status st = collx::load_config(&config);
  // Within a node, as when the ranks can read each other's memory (the usual case).
  const struct {
    collx::Locality where;
    const char* label;
  } places[] = {{{true, true, false, cpu}, "all on one node"},
                {{false, false, false}, "across nodes, one rank on each"},
                {{false, false, true}, "across nodes, at least 2 ranks on one"}};
  if (!st.ok()) {
    std::printf("configuration: error: %s\n", st.message().c_str());
    return 1;
  }
  int usable = 0;  // places where the configuration gives a table (a bad one gives none)
  for (const auto& place : places) {
    collx::Selection sel;
    std::printf("selection (allreduce, %d ranks, host memory, %s):\n", ranks, place.label);
    st = collx::make_selection(config, ranks, place.where, &sel);
    if (!st.ok()) {
      std::printf("  error: %s\n", st.message().c_str());
      continue;
    }
    ++usable;
    for (const collx::SelectRange& r : sel.ranges) {
      collx::Selection one;
      one.ranges = {r};
      std::printf("  %s\n", one.to_string().c_str());
    }
    std::printf("  as COLLX_TUNE: %s\n", sel.to_string().c_str());
    if (!place.where.hierarchical) continue;
    st = collx::make_across_selection(config, nodes, &sel);
    std::printf("  hierarchical's step between %d nodes, by the bytes of one block: %s\n", nodes,
                st.ok() ? sel.to_string().c_str() : ("error: " + st.message()).c_str());
  }
  std::printf("configuration (COLLX_*):\n");
  print_config(false);
  return usable > 0 ? 0 : 1;
}
