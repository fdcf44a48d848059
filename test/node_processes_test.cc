// A communicator counts every process of its machine that its process has seen for its watch
// period: p forked ranks (bootstrapped through Boards, no MPI) make a communicator of all of
// them on two pretended nodes (COLLX_NODE: ranks 0 and 1 on one, the others on the other),
// then ranks 0 and 1 one of their own; both communicators' worker watch periods must be the
// machine's, watch_period_for(p, usable_cpus()). p is one more than the CPUs the ranks can run
// on (at most kMaxRanks), so where that is 2 or more CPUs (CI's machine) ranks 0 and 1 would
// have the uncrowded period in both if a communicator counted its node's ranks (2) instead.
// Both communicators allreduce once (exact results), so that they are really made.
//
// Usage: node_processes_test   Prints each rank's "N passed, N failed"; exit status 1 on any
// failure.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "collx/collx.h"
#include "common/board.h"
#include "core/comm.h"
#include "topo/topo.h"

using namespace collx::test;

namespace {

int g_failed = 0, g_passed = 0;  // per process: each rank reports through its exit status

void expect(bool ok, int rank, const char* what) {
  ok ? ++g_passed : ++g_failed;
  if (!ok) std::printf("FAILED (rank %d): %s\n", rank, what);
}

bool sum_is_exact(collx_comm_t comm, int members) {
  int value = 1;
  return collx_allreduce(COLLX_IN_PLACE, &value, 1, COLLX_INT32, COLLX_SUM, comm) ==
             COLLX_SUCCESS &&
         value == members;
}

int run_rank(Board* all, Board* pair, int rank, int p) {
  setenv("COLLX_NODE", rank < 2 ? "first" : "second", 1);
  expect(collx_init() == COLLX_SUCCESS, rank, "collx_init");
  Group g{all, rank, p};
  collx_comm_params_t params{rank, p, board_allgather, &g};
  collx_comm_t world = nullptr;
  expect(collx_comm_create(&params, &world) == COLLX_SUCCESS, rank, "the communicator of all");
  const auto node = collx::watch_period_for(p, collx::usable_cpus());
  if (world != nullptr) {
    expect(sum_is_exact(world, p), rank, "an allreduce on all, exact");
    expect(reinterpret_cast<collx::Comm*>(world)->watch_period() == node, rank,
           "the communicator of all has the machine's watch period");
  }
  if (rank < 2) {
    Group two{pair, rank, 2};
    collx_comm_params_t pair_params{rank, 2, board_allgather, &two};
    collx_comm_t sub = nullptr;
    expect(collx_comm_create(&pair_params, &sub) == COLLX_SUCCESS, rank,
           "the communicator of ranks 0 and 1");
    if (sub != nullptr) {
      expect(sum_is_exact(sub, 2), rank, "an allreduce on ranks 0 and 1, exact");
      expect(reinterpret_cast<collx::Comm*>(sub)->watch_period() == node, rank,
             "the communicator of ranks 0 and 1 has the machine's watch period");
      expect(collx_comm_destroy(sub) == COLLX_SUCCESS, rank, "collx_comm_destroy (pair)");
    }
  }
  if (world != nullptr) {
    expect(collx_comm_destroy(world) == COLLX_SUCCESS, rank, "collx_comm_destroy (all)");
  }
  expect(collx_finalize() == COLLX_SUCCESS, rank, "collx_finalize");
  std::printf("rank %d: %d passed, %d failed\n", rank, g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

}  // namespace

int main() {
  const int cpus = collx::usable_cpus();
  const int p = std::clamp(cpus + 1, 3, kMaxRanks);
  std::printf("%d ranks, %d CPUs to run on%s\n", p, cpus,
              cpus >= 2 && p == cpus + 1 ? "" : " (the check cannot tell the counts apart here)");
  void* mem = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  auto* pair = new (mem) Board();
  const std::vector<int> rcs =
      fork_ranks(p, [&](Board* all, int rank) { return run_rank(all, pair, rank, p); });
  int failed = rcs.size() == static_cast<size_t>(p) ? 0 : 1;
  for (const int rc : rcs) failed += rc != 0 ? 1 : 0;
  std::printf("%d ranks passed, %d failed\n", p - failed, failed);
  return failed == 0 ? 0 : 1;
}
