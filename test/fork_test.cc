// A process forked by a rank (a data loader's worker, say) neither takes part in its parent's
// collectives nor breaks them. Two ranks (forked processes, bootstrapped through a Board, as
// the fault harness does) make a communicator over UCX, post a collx_iallreduce, and each
// forks a child while it is pending. In each child:
//   - none of the parent's node segments is mapped (MADV_DONTFORK);
//   - every call on the parent's communicator or requests (the pending one, and a small one
//     that had completed before the fork) is COLLX_ERR_INVALID_ARG with a message that names
//     the fork: collx_allreduce, collx_iallreduce, collx_comm_rank, collx_comm_algorithm,
//     collx_comm_destroy, collx_test, collx_wait;
//   - collx_finalize and collx_comm_create are COLLX_ERR_NOT_INITIALIZED (the child has no
//     collx_init of its own yet), saying that a forked child does not inherit it;
//   - after collx_init, the two children make a communicator of their own and allreduce on it
//     (exact results), then destroy it and finalize.
// Meanwhile the parents complete their request and run allreduces on their communicator, of
// 3 and of 2^20 elements (a small and a large message: two algorithms by the defaults), with
// values new in every call, results exact; then they wait for their children.
//
// Usage: fork_test   Prints "N passed, N failed"; exit status 1 on any failure.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collx/collx.h"
#include "common/board.h"

using namespace collx::test;

namespace {

constexpr int kRanks = 2;
constexpr size_t kLarge = 1 << 20;  // int32 elements: the two-shot's size
constexpr int kCalls = 20;          // the parents' allreduces after the fork

// Shared by the ranks and their children (mapped before the forks).
struct Shared {
  Board children;  // the children's own bootstrap
  std::atomic<int> passed, failed;
};
Shared* g_shared = nullptr;

void expect(bool ok, const char* what) {
  if (ok) {
    g_shared->passed.fetch_add(1);
  } else {
    g_shared->failed.fetch_add(1);
    std::printf("FAILED [pid %d]: %s\n", static_cast<int>(getpid()), what);
  }
}

// `st` is `want` and the last error's text contains `words`.
void expect_error(collx_status_t st, collx_status_t want, const char* words, const char* what) {
  const char* msg = collx_last_error();
  const bool ok = st == want && msg != nullptr && std::strstr(msg, words) != nullptr;
  if (!ok) std::printf("  %s: %s: %s\n", what, collx_strerror(st), msg ? msg : "(none)");
  expect(ok, what);
}

// An allreduce of `count` int32 on `comm` whose inputs are new in call `call`: rank r gives
// element i the value call * 1000 + r * 7 + i % 13. Exact.
bool checked_allreduce(collx_comm_t comm, int rank, int p, size_t count, int call) {
  std::vector<int32_t> in(count), out(count, -1);
  for (size_t i = 0; i < count; ++i) in[i] = call * 1000 + rank * 7 + static_cast<int32_t>(i % 13);
  if (collx_allreduce(in.data(), out.data(), count, COLLX_INT32, COLLX_SUM, comm) !=
      COLLX_SUCCESS) {
    std::printf("  allreduce: %s\n", collx_last_error());
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < p; ++r) want += call * 1000 + r * 7 + static_cast<int32_t>(i % 13);
    if (out[i] != want) return false;
  }
  return true;
}

// How many mappings of libcollx's node segments (memfds named "collx") this process has.
int mapped_segments() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return -1;
  char line[4096];
  int n = 0;
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    n += std::strstr(line, "/memfd:collx") != nullptr;
  }
  std::fclose(maps);
  return n;
}

// In the child of rank `rank`: the parent's communicator and request are not usable here;
// then a libcollx of its own, with the other rank's child over `children`.
void child(collx_comm_t parents, collx_request_t pending, collx_request_t done, Board* children,
           int rank) {
  expect(mapped_segments() == 0, "child: none of the parent's node segments is mapped here");
  int32_t x = 1, y = 0;
  const char* forked = "before this process was forked";
  expect_error(collx_allreduce(&x, &y, 1, COLLX_INT32, COLLX_SUM, parents),
               COLLX_ERR_INVALID_ARG, forked, "child: collx_allreduce on the parent's comm");
  collx_request_t r = nullptr;
  expect_error(collx_iallreduce(&x, &y, 1, COLLX_INT32, COLLX_SUM, parents, &r),
               COLLX_ERR_INVALID_ARG, forked, "child: collx_iallreduce on the parent's comm");
  int rk = -1;
  expect_error(collx_comm_rank(parents, &rk), COLLX_ERR_INVALID_ARG, forked,
               "child: collx_comm_rank on the parent's comm");
  expect(collx_comm_algorithm(parents, 4) == nullptr,
         "child: collx_comm_algorithm on the parent's comm is NULL");
  expect_error(collx_comm_destroy(parents), COLLX_ERR_INVALID_ARG, forked,
               "child: collx_comm_destroy of the parent's comm");
  collx_request_t copy = pending;
  expect_error(collx_test(&copy), COLLX_ERR_INVALID_ARG, forked,
               "child: collx_test of the parent's pending request");
  expect(copy == pending, "child: the parent's request is left as it was");
  expect_error(collx_wait(&copy), COLLX_ERR_INVALID_ARG, forked,
               "child: collx_wait of the parent's pending request");
  // One that had completed before the fork (not yet tested there) is the parent's too.
  copy = done;
  expect_error(collx_test(&copy), COLLX_ERR_INVALID_ARG, forked,
               "child: collx_test of the parent's completed request");
  expect(copy == done, "child: the parent's completed request is left as it was");
  expect_error(collx_wait(&copy), COLLX_ERR_INVALID_ARG, forked,
               "child: collx_wait of the parent's completed request");
  const char* not_inherited = "a forked child does not inherit";
  expect_error(collx_finalize(), COLLX_ERR_NOT_INITIALIZED, not_inherited,
               "child: collx_finalize before its own collx_init");

  // Its own libcollx: the two children make a communicator and use it.
  Group g{children, rank, kRanks};
  collx_comm_params_t params{rank, kRanks, board_allgather, &g};
  collx_comm_t own = nullptr;
  expect_error(collx_comm_create(&params, &own), COLLX_ERR_NOT_INITIALIZED, not_inherited,
               "child: collx_comm_create before its own collx_init");
  // (Both children failed that creation together; the board's next round is theirs.)
  expect(collx_init() == COLLX_SUCCESS, "child: collx_init");
  const collx_status_t created = collx_comm_create(&params, &own);
  if (created != COLLX_SUCCESS) std::printf("  child's comm: %s\n", collx_last_error());
  expect(created == COLLX_SUCCESS, "child: collx_comm_create of the children's comm");
  if (created != COLLX_SUCCESS) return;
  for (int call = 0; call < 4; ++call) {
    expect(checked_allreduce(own, rank, kRanks, call % 2 ? kLarge : 5, call),
           "child: allreduce on the children's comm, exact");
  }
  expect(collx_comm_destroy(own) == COLLX_SUCCESS, "child: collx_comm_destroy of its comm");
  expect(collx_finalize() == COLLX_SUCCESS, "child: collx_finalize");
}

int run_rank(Board* board, Board* children, int rank) {
  if (collx_init() != COLLX_SUCCESS) return 2;  // (each failure also fails the rank's exit)
  Group g{board, rank, kRanks};
  collx_comm_params_t params{rank, kRanks, board_allgather, &g};
  collx_comm_t comm = nullptr;
  if (collx_comm_create(&params, &comm) != COLLX_SUCCESS) {
    std::printf("rank %d: collx_comm_create: %s\n", rank, collx_last_error());
    return 2;
  }
  // A small one, deferred: the worker runs it within two watch periods (2 ms) of its post.
  int32_t small_in = rank + 1, small_out = 0;
  collx_request_t done = nullptr;
  if (collx_iallreduce(&small_in, &small_out, 1, COLLX_INT32, COLLX_SUM, comm, &done) !=
      COLLX_SUCCESS) {
    return 2;
  }
  usleep(100000);  // done by now (the child's checks do not depend on it)
  std::vector<int32_t> in(kLarge, rank + 1), out(kLarge, 0);
  collx_request_t pending = nullptr;
  if (collx_iallreduce(in.data(), out.data(), kLarge, COLLX_INT32, COLLX_SUM, comm, &pending) !=
      COLLX_SUCCESS) {
    return 2;
  }

  expect(mapped_segments() > 0, "parent: the node's segment is mapped");
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    child(comm, pending, done, children, rank);
    std::fflush(stdout);
    std::_Exit(0);
  }
  expect(pid > 0, "fork");

  expect(collx_wait(&pending) == COLLX_SUCCESS && pending == nullptr,
         "parent: the request pending at the fork completes");
  expect(collx_test(&done) == COLLX_SUCCESS && done == nullptr && small_out == 3,
         "parent: the request completed before the fork is exact");
  bool exact = true;
  for (size_t i = 0; i < kLarge; ++i) exact = exact && out[i] == 3;
  expect(exact, "parent: the request pending at the fork is exact");
  int call = 0;
  while (call < kCalls && checked_allreduce(comm, rank, kRanks, call % 2 ? kLarge : 3, call)) {
    ++call;
  }
  expect(call == kCalls, "parent: allreduces while the child runs, exact");
  if (pid > 0) {
    int st = 0;
    waitpid(pid, &st, 0);
    expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "parent: the child exited normally");
  }
  expect(checked_allreduce(comm, rank, kRanks, kLarge, kCalls),
         "parent: allreduce after the child exited, exact");
  expect(collx_comm_destroy(comm) == COLLX_SUCCESS, "parent: collx_comm_destroy");
  expect(collx_finalize() == COLLX_SUCCESS, "parent: collx_finalize");
  return 0;
}

}  // namespace

int main() {
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  g_shared = new (mem) Shared();
  const std::vector<int> rcs = fork_ranks(kRanks, [](Board* board, int rank) {
    return run_rank(board, &g_shared->children, rank);
  });
  for (int rc : rcs) {
    if (rc != 0) std::printf("  a rank exited with %d\n", rc);
    expect(rc == 0, "a rank exited normally");
  }
  expect(rcs.size() == kRanks, "the ranks were forked");
  const int passed = g_shared->passed.load(), failed = g_shared->failed.load();
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
