// An out-of-band allgather for ranks that are forked processes (no MPI, no launcher): a
// MAP_SHARED page set up before the fork, two slot arrays used alternately and a monotonic
// arrival counter, with a deadline. Used by the fault harness (a launcher would kill the
// whole job when one rank dies) and by the GPU tests (the GPU machine has no MPI).
#pragma once

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

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
  double deadline_s = 30;  // how long an allgather waits for the other ranks
};

// collx_comm_params_t's allgather: ctx is the rank's Group.
inline int board_allgather(const void* send, void* recv, size_t bytes, void* ctx) {
  auto* g = static_cast<Group*>(ctx);
  if (bytes > kSlot) return 1;
  char(*slots)[kSlot] = g->board->slots[g->calls % 2];
  std::memcpy(slots[g->rank], send, bytes);
  const uint64_t target = (g->calls + 1) * static_cast<uint64_t>(g->size);
  g->board->arrivals.fetch_add(1, std::memory_order_acq_rel);
  const double deadline = now() + g->deadline_s;
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

// Ends a forked rank with exit code rc, or with 23 where LeakSanitizer (under ASan, leak
// checking on) finds that it leaked: _Exit skips the check at exit.
[[noreturn]] inline void exit_rank(int rc) {
#if defined(__SANITIZE_ADDRESS__)
  if (__lsan_do_recoverable_leak_check() != 0) rc = 23;
#endif
  std::fflush(stdout);
  std::_Exit(rc);
}

// Forks p ranks sharing a fresh Board; rank r ends with exit_rank(fn(board, r)). Returns each
// rank's exit status (128 + the signal for a rank killed by one), or an empty vector if the
// board could not be mapped. The GPU programs call it before touching CUDA: a forked child
// cannot use a CUDA context of its parent.
inline std::vector<int> fork_ranks(int p, const std::function<int(Board*, int)>& fn) {
  auto* board = static_cast<Board*>(mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (board == MAP_FAILED) return {};
  new (board) Board();
  std::vector<pid_t> pids(static_cast<size_t>(p));
  std::fflush(stdout);  // or the children print the parent's buffered lines again
  for (int r = 0; r < p; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      std::vector<pid_t>().swap(pids);  // the parent's, not the child's (valgrind's leak check)
      exit_rank(fn(board, r));
    }
  }
  std::vector<int> rcs;
  for (pid_t pid : pids) {
    int st = 0;
    waitpid(pid, &st, 0);
    rcs.push_back(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  }
  munmap(board, sizeof(Board));
  return rcs;
}

}  // namespace collx::test
