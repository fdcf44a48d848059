// The hierarchical allreduce on nodes of different sizes: how much of the reduction each rank
// does, and the bytes node 0 sends to other nodes, counted by the in-process transport and a
// reducer that counts the elements each rank (thread) reduces. No timing. Built against a
// build tree made with -Dcuda=disabled, from this folder:
//   c++ -std=c++20 -O1 -I$SRC/lib -I$SRC/include -I$SRC/test -I$BUILD work.cc \
//     $BUILD/lib/libcollx_internal.a $(pkg-config --libs ucx hwloc) -ldl -lpthread
// ($SRC the source tree, $BUILD its build tree). Usage: ./a.out LABEL (prints table rows).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/inproc.h"
#include "common/pattern.h"

using namespace collx;
using namespace collx::test;

namespace {

thread_local size_t t_reduced = 0;
ReduceFn g_sum = nullptr;
void counting_sum(void* dst, const void* a, const void* b, size_t n) {
  t_reduced += n;
  g_sum(dst, a, b, n);
}

struct Count {
  double most = 0, all = 0;  // elements reduced: by the busiest rank, by all ranks
  double across_node0 = 0;   // bytes node 0's ranks send to other nodes
};

Count count(const char* algo, const std::vector<uint64_t>& nodes, size_t n) {
  const int p = static_cast<int>(nodes.size());
  std::vector<size_t> reduced(nodes.size());
  auto fabrics = run_ranks(p, {config_for(algo, 256 << 10)}, [&](int rank, std::vector<Comm*>& comms) {
    Reducer red;
    if (!make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok()) return;
    g_sum = red.reduce;
    red.reduce = counting_sum;
    std::vector<float> v(n, 1.0f);
    t_reduced = 0;
    const Status st = comms[0]->allreduce(AllreduceOp{v.data(), v.data(), n, red});
    if (!st.ok() || v[n - 1] != static_cast<float>(p)) std::fprintf(stderr, "FAILED %s\n", algo);
    reduced[static_cast<size_t>(rank)] = t_reduced;
  }, true, nodes);
  Count k;
  for (int r = 0; r < p; ++r) {
    k.most = std::max(k.most, static_cast<double>(reduced[static_cast<size_t>(r)]));
    k.all += static_cast<double>(reduced[static_cast<size_t>(r)]);
    for (int d = 0; d < p; ++d) {
      if (nodes[r] != nodes[d] && nodes[r] == nodes[0]) {
        k.across_node0 += static_cast<double>(fabrics[0]->bytes_sent(r, d));
      }
    }
  }
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  const char* label = argc > 1 ? argv[1] : "";
  struct Layout {
    const char* name;
    std::vector<uint64_t> nodes;
  };
  const Layout layouts[] = {
      {"2 x 4", {0, 0, 0, 0, 1, 1, 1, 1}},
      {"8 + 1", {0, 0, 0, 0, 0, 0, 0, 0, 1}},
      {"4 + 1", {0, 0, 0, 0, 1}},
      {"5 + 4", {0, 0, 0, 0, 0, 1, 1, 1, 1}},
      {"3 + 2", {0, 0, 0, 1, 1}},
      {"4 + 4 + 2", {0, 0, 0, 0, 1, 1, 1, 1, 2, 2}},
      {"4 + 2 + 2", {0, 0, 0, 0, 1, 1, 2, 2}},
      {"2 + 1 + 1", {0, 0, 1, 2}},
  };
  const size_t n = size_t{1} << 20;  // 4 MiB of float32: the reduce-scatter path
  for (const Layout& l : layouts) {
    const Count k = count("hierarchical", l.nodes, n);
    std::printf("| %s | %s | %.3g n | %.3g n | %.3g B |\n", l.name, label, k.most / n, k.all / n,
                k.across_node0 / (4.0 * n));
  }
}
