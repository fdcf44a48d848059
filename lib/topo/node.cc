#include "topo/node.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <unordered_map>

namespace collx {

namespace {

// The block count of NodeLayout: with B blocks, the busiest owner on a node of k ranks
// reduces ceil(B/k) blocks of k inputs each, ceil(B/k) * k / B of a message's inputs.
int hierarchy_blocks(const std::vector<int>& sizes, int max_groups) {
  const int fewest = *std::min_element(sizes.begin(), sizes.end());
  const int most = *std::max_element(sizes.begin(), sizes.end());
  int best = 1;
  long best_num = 0, best_den = 1;  // the cost of `best`, as a fraction
  for (int b = 1; b <= most && (b + fewest - 1) / fewest <= max_groups; ++b) {
    long num = 0;
    for (int k : sizes) num = std::max(num, static_cast<long>((b + k - 1) / k) * k);
    if (b == 1 || num * best_den < best_num * b) best = b, best_num = num, best_den = b;
  }
  return best;
}

}  // namespace

NodeLayout node_layout(const std::vector<uint64_t>& node_of, int rank, int max_groups) {
  NodeLayout l;
  std::unordered_map<uint64_t, size_t> number;  // node id -> node number
  std::vector<std::vector<int>> members;         // node number -> its ranks, ascending
  for (size_t r = 0; r < node_of.size(); ++r) {
    const size_t n = number.emplace(node_of[r], members.size()).first->second;
    if (n == members.size()) members.emplace_back();
    members[n].push_back(static_cast<int>(r));
    if (static_cast<int>(r) == rank) l.node_index = static_cast<int>(n);
  }
  l.nodes = static_cast<int>(members.size());
  l.local = members[static_cast<size_t>(l.node_index)];
  for (size_t i = 0; i < l.local.size(); ++i) {
    if (l.local[i] == rank) l.local_rank = static_cast<int>(i);
  }
  l.fewest = l.most = static_cast<int>(l.local.size());
  for (const std::vector<int>& m : members) {
    l.fewest = std::min(l.fewest, static_cast<int>(m.size()));
    l.most = std::max(l.most, static_cast<int>(m.size()));
  }
  std::vector<int> sizes;
  for (const std::vector<int>& m : members) sizes.push_back(static_cast<int>(m.size()));
  l.blocks = hierarchy_blocks(sizes, max_groups);
  const int k = static_cast<int>(l.local.size());
  for (int b = l.local_rank; b < l.blocks; b += k) {
    NodeLayout::Group g{.block = b, .ranks = {}, .lanes = {}};
    for (const std::vector<int>& m : members) {
      g.ranks.push_back(m[static_cast<size_t>(b) % m.size()]);
      g.lanes.push_back(static_cast<uint32_t>(static_cast<size_t>(b) / m.size()));
    }
    l.groups.push_back(std::move(g));
  }
  return l;
}

uint64_t node_id(const std::string& override_name) {
  if (!override_name.empty()) {
    const std::string name = "override:" + override_name;
    return fnv1a(name.data(), name.size());
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  const std::string name = std::string(host) + "/" + boot;
  return fnv1a(name.data(), name.size());
}

int NodeProcesses::note(std::vector<int64_t> pids) {
  std::sort(pids.begin(), pids.end());
  return note_processes(static_cast<int>(std::unique(pids.begin(), pids.end()) - pids.begin()));
}

int NodeProcesses::note_processes(int processes) {
  int most = most_.load(std::memory_order_relaxed);
  while (most < processes &&
         !most_.compare_exchange_weak(most, processes, std::memory_order_relaxed)) {
  }
  return std::max(most, processes);
}

NodeProcesses& node_processes() {
  static NodeProcesses the;
  return the;
}

bool cma_readable(int64_t pid, uint64_t address, uint64_t expect) {
  uint64_t value = 0;
  iovec local{&value, sizeof value};
  iovec remote{reinterpret_cast<void*>(address), sizeof value};
  const ssize_t n = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
  return n == static_cast<ssize_t>(sizeof value) && value == expect;
}

}  // namespace collx
