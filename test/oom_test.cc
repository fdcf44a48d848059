// Memory that runs out: the library's allocations (through this program's operator new, as
// test/alloc_test.cc counts them) fail one at a time, the k-th for k = 0, 1, ... until a run
// reaches no k-th allocation. No call may end the process (before, 37 of the 42 allocations
// of the one-rank run ended it in std::terminate). Each call returns success or an error; on
// the rank whose allocation failed, the first error is COLLX_ERR_NO_MEMORY with "out of
// memory" in its message; no error is COLLX_ERR_INTERNAL; results reported as successes are
// exact; collx_finalize succeeds after a collx_init that did (nothing left holding it).
//   oom_test           one rank in this process: collx_init, a communicator of one, blocking
//                      and non-blocking allreduces, collx_comm_algorithm, collx_comm_destroy
//                      and collx_finalize, with COLLX_PROFILE=1 (its report at destruction,
//                      and its JSON file); after each failing run the same run without
//                      failures must pass (the library recovered), and as many allocations
//                      must be live and file descriptors open as after a first run (nothing
//                      the failure cut short leaked); then again with 4 allocations failing
//                      in a row from the k-th (OOM_RUN=n: n in a row alone).
//   oom_test --ranks   two forked ranks over UCX and the node's shared memory, rank 0's k-th
//                      allocation failing: the same calls, 3 and 2^18 elements (the 1 MiB
//                      iallreduce runs on the communicator's thread), COLLX_TIMEOUT=0.3 so
//                      that rank 1 learns soon that rank 0 left a collective; both ranks end
//                      normally (not by a signal) within 30 s, having joined the same
//                      allgather rounds, both made the communicator or neither did, each
//                      closed every file descriptor it opened, and neither's
//                      collx_comm_create times out (rank 0 tells rank 1 its creation failed,
//                      wherever it did). Then again with the ranks on two pretended nodes,
//                      and on one node with 4 allocations failing in a row from the k-th (a
//                      failure while another is handled: OOM_RUN=n, with OOM_K, that alone).
//                      OOM_RANK=1: rank 1's allocations fail instead (the rank that attaches
//                      the segment and is not the bootstrap's root).
// Only allocations made while the test is inside a libcollx call count (the test's own never
// fail); the communicator's thread's count too while the test waits for it. UCX and MPI
// allocate through malloc: not failed here. Prints "N passed, N failed" (OOM_VERBOSE=1: every
// error each call returned too; OOM_K=k: --ranks runs that k alone).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "common/board.h"
#include "common/failing_new.h"

using namespace collx::test;

namespace {

int g_passed = 0, g_failed = 0;

void expect(bool ok, const std::string& what) {
  ok ? ++g_passed : ++g_failed;
  if (!ok && g_failed <= 20) std::printf("FAILED %s\n", what.c_str());
}

// One rank's run: every status it got, checked by the rules above.
struct Run {
  int rank = 0;
  long fail_at = -1;  // the failing allocation's index (from 0), -1 for none
  bool any_error = false;
  std::string where;  // "rank R, k=K": for the messages
  std::vector<std::string> failures;

  // Runs one libcollx call inside the counted window and checks its status.
  collx_status_t call(const char* what, collx_status_t st) {
    check(what, st);
    return st;
  }
  void check(const char* what, collx_status_t st) {
    if (st == COLLX_SUCCESS || st == COLLX_IN_PROGRESS) return;
    const std::string msg = collx_last_error();
    const std::string name = std::string(what) + ": " + collx_strerror(st) + " (" + msg + ")";
    if (std::getenv("OOM_VERBOSE") != nullptr) {
      std::printf("%.3f %s: %s\n", now(), where.c_str(), name.c_str());
    }
    if (st == COLLX_ERR_INTERNAL) failures.push_back(name + ": internal");
    if (st == COLLX_ERR_TIMEOUT && std::strcmp(what, "collx_comm_create") == 0) {
      // A rank whose creation fails tells its peers in the round they wait in.
      failures.push_back(name + ": a peer's failure left to the deadline");
    }
    if (!any_error && rank == 0 && fail_at >= 0 && fail_at < g_seen.load()) {
      // The first error on the rank whose allocation failed is that failure.
      if (st != COLLX_ERR_NO_MEMORY || msg.find("out of memory") == std::string::npos) {
        failures.push_back(name + ": the first error is not the allocation's");
      }
    }
    any_error = true;
  }
};

template <typename F>
collx_status_t inside(F&& f) {
  g_inside.store(true);
  const collx_status_t st = f();
  g_inside.store(false);
  return st;
}

void fill(std::vector<float>& v, int rank) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(rank + 1) * 0.5f + (i % 7);
}

bool exact(const std::vector<float>& v, int size) {
  for (size_t i = 0; i < v.size(); ++i) {
    float want = 0;
    for (int r = 0; r < size; ++r) want += static_cast<float>(r + 1) * 0.5f + (i % 7);
    if (v[i] != want) return false;
  }
  return true;
}

// collx_init .. collx_finalize on a communicator of `size` (allgather: `g`, or this process
// alone). A call that follows a failed one still runs where it can (comm_create after a failed
// init: its peers must not wait for it).
void sequence(Run& run, int size, Group* g) {
  auto self = [](const void* s, void* r, size_t n, void*) {
    std::memcpy(r, s, n);
    return 0;
  };
  const collx_status_t init = run.call("collx_init", inside([] { return collx_init(); }));
  collx_comm_params_t params{};
  params.rank = run.rank;
  params.size = size;
  params.allgather = g != nullptr ? board_allgather : +self;
  params.allgather_ctx = g;
  collx_comm_t comm = nullptr;
  run.call("collx_comm_create", inside([&] { return collx_comm_create(&params, &comm); }));
  if (g != nullptr) {
    // Every rank made the communicator or none did (a creation that fails in one rank alone
    // after the bootstrap fails in all: the status rounds of core/comm_create.cc).
    const uint8_t made = comm != nullptr ? 1 : 0;
    std::vector<uint8_t> all(static_cast<size_t>(size));
    if (board_allgather(&made, all.data(), 1, g) != 0) {
      run.failures.push_back("the allgather after collx_comm_create: the ranks' rounds differ");
    } else if (std::count(all.begin(), all.end(), made) != size) {
      run.failures.push_back("collx_comm_create succeeded in some ranks and failed in others");
    }
  }
  if (comm != nullptr) {
    for (size_t count : {size_t{3}, size_t{1} << 18}) {
      std::vector<float> v(count);
      fill(v, run.rank);
      const collx_status_t st = run.call("collx_allreduce", inside([&] {
        return collx_allreduce(COLLX_IN_PLACE, v.data(), count, COLLX_FLOAT32, COLLX_SUM, comm);
      }));
      if (st == COLLX_SUCCESS && !exact(v, size)) run.failures.push_back("allreduce not exact");
    }
    for (size_t count : {size_t{1} << 18, size_t{3}}) {
      std::vector<float> in(count), out(count, -1.0f);
      fill(in, run.rank);
      collx_request_t req = nullptr;
      collx_status_t st = run.call("collx_iallreduce", inside([&] {
        return collx_iallreduce(in.data(), out.data(), count, COLLX_FLOAT32, COLLX_SUM, comm,
                                &req);
      }));
      if (st != COLLX_SUCCESS) continue;
      st = COLLX_IN_PROGRESS;
      for (int i = 0; count < 1000 && i < 100000 && st == COLLX_IN_PROGRESS; ++i) {
        st = inside([&] { return collx_test(&req); });  // the small one by tests
        if (st == COLLX_IN_PROGRESS) usleep(10);
      }
      if (st == COLLX_IN_PROGRESS) st = inside([&] { return collx_wait(&req); });
      run.check(count < 1000 ? "collx_test" : "collx_wait", st);
      if (st == COLLX_SUCCESS && !exact(out, size)) run.failures.push_back("iallreduce not exact");
    }
    const char* algo = nullptr;
    (void)inside([&] {
      algo = collx_comm_algorithm(comm, 1 << 20);
      return COLLX_SUCCESS;
    });
    if (algo == nullptr) run.check("collx_comm_algorithm", COLLX_ERR_NO_MEMORY);
    run.call("collx_comm_destroy", inside([&] { return collx_comm_destroy(comm); }));
  }
  // With peers: each waits for the others before collx_finalize, which destroys the UCX
  // worker; UCX 1.13's TCP transport asserts (and aborts the process) when the worker of a peer
  // it is connecting to goes away. Every rank joined the same allgather rounds (a failed
  // creation joins the one its peers wait in), so this one lines up.
  if (g != nullptr && board_barrier(*g) != 0) {
    run.failures.push_back("the barrier before collx_finalize: the ranks' rounds differ");
  }
  if (init == COLLX_SUCCESS) {
    // Every communicator made was destroyed (or never made): nothing holds the context.
    const collx_status_t st = run.call("collx_finalize", inside([] { return collx_finalize(); }));
    if (st != COLLX_SUCCESS) run.failures.push_back("collx_finalize failed after collx_init");
  }
}

// One rank in this process, the k-th allocation failing (and the next in_a_row - 1): that
// run, then a run without failures. Returns whether the k-th allocation was reached.
bool one_rank_at(long k, long in_a_row) {
  Run run;
  run.fail_at = k;
  run.where = "k=" + std::to_string(k) + (in_a_row > 1 ? ", " + std::to_string(in_a_row) +
                                                              " in a row" : "");
  g_seen = 0;
  fail_from(k, in_a_row);
  sequence(run, 1, nullptr);
  const bool reached = g_seen.load() > k;
  fail_none();
  for (const std::string& f : run.failures) expect(false, run.where + ": " + f);
  expect(run.failures.empty(), run.where + ": the run's rules");
  Run clean;
  clean.where = run.where + ", then without failures";
  sequence(clean, 1, nullptr);
  for (const std::string& f : clean.failures) expect(false, clean.where + ": " + f);
  expect(!clean.any_error && clean.failures.empty(), clean.where + ": every call succeeds");
  return reached;
}

// k = 0, 1, ... until no k-th allocation is reached; after each, as many allocations are live
// and as many file descriptors open as after a first run without failures (nothing the
// failure cut short leaked).
void one_rank() {
  {
    Run first;
    sequence(first, 1, nullptr);
    expect(!first.any_error && first.failures.empty(), "a run without failures");
  }
  const char* run = std::getenv("OOM_RUN");
  const std::vector<long> passes = run != nullptr ? std::vector<long>{std::atol(run)}
                                                  : std::vector<long>{1, 4};
  const long live = g_live.load(), fds = open_fds();  // (after the allocations above)
  for (const long in_a_row : passes) {  // (4: a failure while another is handled)
    for (long k = 0;; ++k) {
      const bool reached = one_rank_at(k, in_a_row);
      const long leaked = g_live.load() - live, fds_leaked = open_fds() - fds;
      expect(leaked == 0, "k=" + std::to_string(k) + ": nothing leaked (" +
                              std::to_string(leaked) + " allocations more)");
      expect(fds_leaked == 0, "k=" + std::to_string(k) + ": no file descriptor leaked (" +
                                  std::to_string(fds_leaked) + " more open)");
      if (!reached) {
        std::printf("one rank, %ld in a row: %ld allocations inside libcollx calls, each "
                    "failed in turn\n", in_a_row, k);
        expect(k > 10, "the run allocates");
        break;
      }
    }
  }
}

// Two forked ranks, rank `failing`'s k-th allocation failing; on one node, or (two_nodes)
// each on a pretended node of its own (UCX alone, announcements between the ranks). Exit
// status: 0 if the rules held and the allocation was reached, 3 if the run reached no k-th
// allocation, 1 if a rule broke.
void two_ranks(bool two_nodes, long in_a_row, int failing) {
  const std::string setting = std::string(two_nodes ? "two ranks on two pretended nodes"
                                                     : "two ranks") +
                              (in_a_row > 1 ? ", " + std::to_string(in_a_row) + " in a row" : "");
  const char* only = std::getenv("OOM_K");  // one k alone (to look into a failure)
  for (long k = only != nullptr ? std::atol(only) : 0;; ++k) {
    const std::vector<int> rcs = fork_ranks(2, [&](Board* b, int rank) {
      alarm(30);  // a hang ends as SIGALRM, which the parent reports
      if (two_nodes) setenv("COLLX_NODE", rank == 0 ? "node-a" : "node-b", 1);
      Group g{b, rank, 2};
      g.deadline_s = 5;
      Run run;
      run.rank = rank;
      run.fail_at = rank == failing ? k : -1;
      run.where = "rank " + std::to_string(rank) + ", k=" + std::to_string(k);
      g_seen = 0;
      const long fds = open_fds();
      fail_from(run.fail_at, in_a_row);
      sequence(run, 2, &g);
      if (open_fds() != fds) run.failures.push_back("file descriptors left open");
      for (const std::string& f : run.failures) {
        std::printf("FAILED rank %d, k=%ld: %s\n", rank, k, f.c_str());
      }
      if (!run.failures.empty()) return 1;
      return rank == failing && g_seen.load() <= k ? 3 : 0;
    });
    expect(rcs.size() == 2, "two ranks forked");
    if (rcs.size() != 2) return;
    const std::string where = setting + ", k=" + std::to_string(k);
    for (int r = 0; r < 2; ++r) {
      expect(rcs[r] == 0 || (r == failing && rcs[r] == 3),
             where + ": rank " + std::to_string(r) + " ended normally with its rules held (" +
                 std::to_string(rcs[r]) + ")");
    }
    if (only != nullptr) return;
    if (rcs[failing] != 0) {
      std::printf("%s: %ld allocations of rank %d inside libcollx calls, each failed in turn\n",
                  setting.c_str(), k, failing);
      expect(k > 10, "the failing rank allocates");
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool ranks = argc == 2 && std::strcmp(argv[1], "--ranks") == 0;
  if (argc > 2 || (argc == 2 && !ranks)) {
    std::fprintf(stderr, "usage: oom_test [--ranks]\n");
    return 2;
  }
  setenv("COLLX_TIMEOUT", ranks ? "0.3" : "1", 1);  // how long a rank waits for one that failed
  if (!ranks) {
    // The profile's report (its allocations fail in turn too) goes to stderr at every
    // destruction, and its JSON to a file: away with both. This program writes to stdout.
    setenv("COLLX_PROFILE", "1", 1);
    setenv("COLLX_PROFILE_FILE", "/dev/null", 1);
    if (std::freopen("/dev/null", "w", stderr) == nullptr) return 2;
  }
  if (ranks) {
    // The third: an allocation that fails while the failure of another is handled.
    const char* run = std::getenv("OOM_RUN");  // (with OOM_K: that run alone)
    const char* rank = std::getenv("OOM_RANK");  // the failing rank (default 0)
    const int failing = rank != nullptr ? std::atoi(rank) : 0;
    if (run == nullptr) {
      two_ranks(false, 1, failing);
      two_ranks(true, 1, failing);
    }
    two_ranks(false, run != nullptr ? std::atol(run) : 4, failing);
  } else {
    one_rank();
  }
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
