// Bytes that cross nodes in one allreduce, per node, for the flat algorithms and hierarchical,
// counted by the in-process transport (no timing). Built against the build tree:
//   c++ -std=c++20 -O1 -I../../../lib -I../../../include -I../../../test -I../../../build \
//     traffic.cc ../../../build/lib/libcollx_internal.a ../../../build/lib/libcollx_cuda.a \
//     -L/usr/local/cuda-13.0/lib64 -lcudart_static -lrt $(pkg-config --libs ucx hwloc) -ldl -lpthread
// (without the CUDA build, drop libcollx_cuda.a and the CUDA runtime).
// Usage: ./a.out  (prints a markdown table)
#include <cstdio>
#include <string>
#include <vector>

#include "common/inproc.h"
#include "common/pattern.h"

using namespace collx;
using namespace collx::test;

// Bytes sent across nodes by the ranks of node 0, and by every rank to ranks of its own node
// through the transport (shared memory not counted: it is not a message).
struct Count {
  double across_node0 = 0, within = 0;
};

Count count(const char* algo, const std::vector<uint64_t>& nodes, size_t n) {
  const int p = static_cast<int>(nodes.size());
  Config c = config_for(algo, 256 << 10);
  auto fabrics = run_ranks(p, {c}, [&](int rank, std::vector<Comm*>& comms) {
    Reducer red;
    if (!make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok()) return;
    std::vector<float> v(n, 1.0f);
    Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), n, red});
    if (!st.ok() || v[n - 1] != static_cast<float>(p)) std::fprintf(stderr, "FAILED %s\n", algo);
  }, true, nodes);
  Count k;
  for (int r = 0; r < p; ++r) {
    for (int d = 0; d < p; ++d) {
      const double b = static_cast<double>(fabrics[0]->bytes_sent(r, d));
      if (nodes[r] != nodes[d] && nodes[r] == nodes[0]) k.across_node0 += b;
      if (nodes[r] == nodes[d]) k.within += b;
    }
  }
  return k;
}

int main() {
  struct Layout {
    const char* name;
    std::vector<uint64_t> nodes;
  };
  const Layout layouts[] = {
      {"2 nodes x 4, node by node", {0, 0, 0, 0, 1, 1, 1, 1}},
      {"2 nodes x 4, round-robin", {0, 1, 0, 1, 0, 1, 0, 1}},
      {"4 nodes x 2, node by node", {0, 0, 1, 1, 2, 2, 3, 3}},
      {"4 nodes x 4, node by node", {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}},
      {"3 nodes of 4, 4 and 2, node by node", {0, 0, 0, 0, 1, 1, 1, 1, 2, 2}},
  };
  std::printf("| ranks | message | algorithm | node 0 sends across nodes | p2p within nodes, all ranks |\n");
  std::printf("| --- | ---: | --- | ---: | ---: |\n");
  for (const Layout& l : layouts) {
    for (size_t n : {size_t{1024}, size_t{1} << 20}) {  // 4 KiB, 4 MiB of float32
      const double B = static_cast<double>(n * 4);
      for (const char* algo : {"recursive_doubling", "rabenseifner", "ring", "hierarchical"}) {
        const Count k = count(algo, l.nodes, n);
        std::printf("| %s | %s | %s | %.3g B | %.3g B |\n", l.name, n == 1024 ? "4 KiB" : "4 MiB",
                    algo, k.across_node0 / B, k.within / B);
      }
    }
  }
}
