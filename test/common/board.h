// An out-of-band allgather for ranks that are forked processes (no MPI, no launcher): a
// MAP_SHARED page set up before the fork, two slot arrays used alternately and a monotonic
// arrival counter, with a deadline. Used by the fault harness (a launcher would kill the
// whole job when one rank dies) and by the GPU tests (the GPU machine has no MPI).
#pragma once

#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace collx::test {

constexpr int kMaxRanks = 8;
constexpr size_t kSlot = 4096;

inline double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // system-wide: comparable across the forked ranks
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Board {
  std::atomic<uint64_t> arrivals;
  char slots[2][kMaxRanks][kSlot];
};

struct Group {
  Board* board;
  int rank;
  int size;
  uint64_t calls = 0;
};

// collx_comm_params_t's allgather: ctx is the rank's Group.
inline int board_allgather(const void* send, void* recv, size_t bytes, void* ctx) {
  auto* g = static_cast<Group*>(ctx);
  if (bytes > kSlot) return 1;
  char(*slots)[kSlot] = g->board->slots[g->calls % 2];
  std::memcpy(slots[g->rank], send, bytes);
  const uint64_t target = (g->calls + 1) * static_cast<uint64_t>(g->size);
  g->board->arrivals.fetch_add(1, std::memory_order_acq_rel);
  const double deadline = now() + 30;
  while (g->board->arrivals.load(std::memory_order_acquire) < target) {
    if (now() > deadline) return 2;
    sched_yield();
  }
  for (int i = 0; i < g->size; ++i) {
    std::memcpy(static_cast<char*>(recv) + static_cast<size_t>(i) * bytes, slots[i], bytes);
  }
  ++g->calls;
  return 0;
}

inline int board_barrier(Group& g) {
  const char mine = 0;
  char all[kMaxRanks];
  return board_allgather(&mine, all, 1, &g);
}

}  // namespace collx::test
