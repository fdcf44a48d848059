// Runs a function on p in-process ranks (threads), each holding a Comm over the in-process
// transport, so algorithm tests need neither UCX nor MPI.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/comm.h"
#include "transport/inproc.h"

namespace collx::test {

// Catch2 v2 assertions are not thread-safe: rank threads assert through TCHECK.
inline std::mutex& catch_mutex() {
  static std::mutex m;
  return m;
}
// The expression is evaluated under the lock: keep calls that block on other ranks out of it.
#define TCHECK(...)                                                  \
  do {                                                               \
    std::lock_guard<std::mutex> _tcheck_guard(collx::test::catch_mutex()); \
    CHECK(__VA_ARGS__);                                              \
  } while (0)

// fn(rank, comms): comms[k] is this rank's communicator made with configs[k]. The ranks are
// threads of one process, so each communicator also gets memory they all share (as ranks of
// one node share a segment) and the shm_* algorithms; with `share_memory` false, none (as
// ranks on different nodes). With `nodes` (rank r on node nodes[r]), the ranks pretend to
// live on those nodes: each node's ranks share memory of their own (if share_memory).
// Returns the in-process fabrics (one per config), which count the bytes ranks sent.
inline std::vector<std::unique_ptr<InprocFabric>> run_ranks(int p, const std::vector<Config>& configs,
                      const std::function<void(int, std::vector<Comm*>&)>& fn,
                      bool share_memory = true, const std::vector<uint64_t>& nodes = {}) {
  const std::vector<uint64_t> node_of = nodes.empty() ? std::vector<uint64_t>(p) : nodes;
  const auto on_node = [&](uint64_t n) {
    return static_cast<int>(std::count(node_of.begin(), node_of.end(), n));
  };
  std::vector<std::unique_ptr<InprocFabric>> fabrics;
  std::vector<std::vector<std::unique_ptr<uint64_t[]>>> shared(configs.size());  // [k][rank]
  for (size_t k = 0; k < configs.size(); ++k) {
    fabrics.push_back(std::make_unique<InprocFabric>(p));
    for (int r = 0; r < p; ++r) {  // a node's memory is its lowest rank's entry
      const auto first = std::find(node_of.begin(), node_of.end(), node_of[r]) - node_of.begin();
      if (first != r) {
        shared[k].emplace_back();
        continue;
      }
      const size_t bytes = ShmChannel::bytes_for(on_node(node_of[r]), configs[k].shm_chunk,
                                                 configs[k].shm_areas);
      shared[k].emplace_back(new uint64_t[(bytes + 63) / 8 + 8]());  // zeroed; aligned below
    }
  }
  auto aligned = [&](size_t k, int r) {
    const auto first = std::find(node_of.begin(), node_of.end(), node_of[r]) - node_of.begin();
    const auto a = reinterpret_cast<uintptr_t>(shared[k][static_cast<size_t>(first)].get());
    return reinterpret_cast<void*>((a + 63) & ~uintptr_t{63});
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&, r] {
      std::vector<Comm*> comms;
      for (size_t k = 0; k < configs.size(); ++k) {
        Comm* c = nullptr;
        Status st = Comm::create(std::make_unique<InprocTransport>(*fabrics[k], r), configs[k], &c,
                                 share_memory ? aligned(k, r) : nullptr, &node_of);
        if (!st.ok()) throw std::runtime_error(st.message());
        comms.push_back(c);
      }
      fn(r, comms);
      for (Comm* c : comms) delete c;
    });
  }
  for (auto& t : threads) t.join();
  return fabrics;
}

inline Config config_for(const char* algo, size_t segment = 64 << 10) {
  Config c;
  c.algo = algo;
  c.ring_segment = segment;
  c.shm_chunk = segment;
  c.spin = 5;  // microseconds: usually more threads than cores
  c.timeout_s = 120;
  c.cuda_ipc_min = 0;  // device buffers over CUDA IPC at every size (tests of the threshold
  c.cuda_ipc_min_timesliced = 0;  // set their own)
  c.cuda_flags_max = 0;  // the one-kernel allreduce only where a test asks for it
  return c;
}

}  // namespace collx::test
