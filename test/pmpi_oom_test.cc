// Memory that runs out under the preload (libcollx_mpi.so, in LD_PRELOAD): the k-th C++
// allocation of an MPI program fails (test/common/failing_new.h; MPI, UCX and hwloc allocate
// through malloc, so these are the preload's and libcollx's), for k = 0, 1, ... until a run
// reaches no k-th allocation. Each run is a forked child, a singleton MPI process (no
// mpiexec), with MPI_ERRORS_RETURN on its communicators: MPI_Init; blocking, non-blocking
// (waited for, waited for in MPI_Waitall, freed before completion) and persistent allreduces
// (MPI_Start then MPI_Wait, MPI_Start then MPI_Testany) on MPI_COMM_WORLD and a dup of it;
// MPI_Comm_free; MPI_Finalize. The child must end normally (not by a signal: before, a
// std::bad_alloc leaving the preload ended the process in std::terminate) within 30 s; each
// call returns MPI_SUCCESS with an exact result, or an error of class MPI_ERR_NO_MEM or
// MPI_ERR_OTHER (libcollx's, on a communicator an earlier failure left unusable), the first
// one MPI_ERR_NO_MEM; a request an erroneous call returns is MPI_REQUEST_NULL; MPI_Finalize
// succeeds, and leaves as many file descriptors open as there were before MPI_Init. A run
// without failures must return no error, and some run must see MPI_ERR_NO_MEM.
// The same again with 4 allocations failing in a row from the k-th (a failure while another
// is handled). Prints "N passed, N failed" (PMPI_OOM_VERBOSE=1: every error too; PMPI_OOM_K=k:
// k alone; PMPI_OOM_RUN=n: n in a row alone). With --ranks, two or more ranks, rank 1 failing:
// ranks().
//   LD_PRELOAD=.../libcollx_mpi.so pmpi_oom_test
//   mpiexec -n 2 env LD_PRELOAD=.../libcollx_mpi.so pmpi_oom_test --ranks
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/failing_new.h"

using namespace collx::test;

namespace {

// How a child's run ended (its exit status).
enum Outcome { kClean = 0, kFailed = 1, kErrors = 2, kNotReached = 3 };

bool g_verbose = false;
long g_k = -1;
long g_in_a_row = 1;  // allocations that fail in a row from the k-th
int g_errors = 0;    // calls that returned an error
bool g_bad = false;  // a check failed
bool g_first_no_mem = true;  // the first error must be MPI_ERR_NO_MEM (its own allocations)

void bad(const char* what) {
  std::printf("k=%ld: FAILED %s\n", g_k, what);
  g_bad = true;
}

// One call's return code: success, or an allowed error (the first one MPI_ERR_NO_MEM).
bool ok(const char* what, int rc) {
  if (rc == MPI_SUCCESS) return true;
  int cls = -1;
  MPI_Error_class(rc, &cls);
  if (g_verbose) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    std::printf("k=%ld: %s: error class %d: %s\n", g_k, what, cls, text);
  }
  char msg[160];
  if (cls != MPI_ERR_NO_MEM && cls != MPI_ERR_OTHER) {
    std::snprintf(msg, sizeof msg, "%s: error class %d, not MPI_ERR_NO_MEM or MPI_ERR_OTHER",
                  what, cls);
    bad(msg);
  } else if (g_first_no_mem && g_errors == 0 && cls != MPI_ERR_NO_MEM) {
    std::snprintf(msg, sizeof msg, "%s: the first error is class %d, not MPI_ERR_NO_MEM", what,
                  cls);
    bad(msg);
  }
  ++g_errors;
  return false;
}

// An allreduce's result (on one process, its input).
void expect_equal(const char* what, const float* got, const float* want, int n) {
  if (std::memcmp(got, want, sizeof(float) * static_cast<size_t>(n)) != 0) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s: the result is wrong", what);
    bad(msg);
  }
}

void fill(float* v, int n, float seed) {
  for (int i = 0; i < n; ++i) v[i] = seed + static_cast<float>(i % 13);
}

// A request an erroneous call returned must be MPI_REQUEST_NULL.
void expect_null(const char* what, MPI_Request r) {
  if (r != MPI_REQUEST_NULL) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "%s failed but returned a request", what);
    bad(msg);
  }
}

constexpr int kBig = 1 << 16;
float g_in[kBig], g_want[kBig], g_orphan_in[5], g_orphan_out[5];

// The child's program (every allocation counted, the k-th failing).
Outcome child() {
  alarm(30);  // (the default action ends the process: a hang is a signal)
  fail_from(g_k, g_in_a_row);
  const long fds = open_fds();
  g_inside.store(true);
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    bad("MPI_Init");
    return kFailed;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  float a[3] = {1.5f, -2.0f, 7.25f}, b[3] = {};
  if (ok("MPI_Allreduce", MPI_Allreduce(a, b, 3, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD))) {
    expect_equal("MPI_Allreduce", b, a, 3);
  }
  MPI_Comm dup = MPI_COMM_NULL;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &dup) != MPI_SUCCESS) {
    bad("MPI_Comm_dup");
    return kFailed;
  }
  fill(g_in, kBig, 0.5f);
  std::memcpy(g_want, g_in, sizeof g_in);
  if (ok("MPI_Allreduce in place", MPI_Allreduce(MPI_IN_PLACE, g_in, kBig, MPI_FLOAT, MPI_MAX,
                                                 dup))) {
    expect_equal("MPI_Allreduce in place", g_in, g_want, kBig);
  }
  // Non-blocking: waited for; freed before completion (ended by a later call or at
  // MPI_Finalize); two waited for in MPI_Waitall.
  MPI_Request r = MPI_REQUEST_NULL;
  float c[3] = {};
  if (!ok("MPI_Iallreduce", MPI_Iallreduce(a, c, 3, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r))) {
    expect_null("MPI_Iallreduce", r);
  } else if (ok("MPI_Wait", MPI_Wait(&r, MPI_STATUS_IGNORE))) {
    expect_equal("MPI_Iallreduce", c, a, 3);
  }
  fill(g_orphan_in, 5, 3.0f);
  MPI_Request orphan = MPI_REQUEST_NULL;
  const bool orphaned = ok("MPI_Iallreduce (to free)", MPI_Iallreduce(g_orphan_in, g_orphan_out,
                                                                      5, MPI_FLOAT, MPI_SUM, dup,
                                                                      &orphan));
  if (!orphaned) expect_null("MPI_Iallreduce (to free)", orphan);
  // (MPICH 4.0.2 refuses to free an active request of its own non-blocking collectives, one
  // passed through: "The supplied request was invalid (kind=10)"; then it is waited for.)
  if (orphaned && MPI_Request_free(&orphan) != MPI_SUCCESS) {
    ok("MPI_Wait (not freed)", MPI_Wait(&orphan, MPI_STATUS_IGNORE));
  }
  MPI_Request two[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  float d[3] = {}, e[3] = {};
  const bool d_ok = ok("MPI_Iallreduce 1 of 2", MPI_Iallreduce(a, d, 3, MPI_FLOAT, MPI_SUM, dup,
                                                               &two[0]));
  const bool e_ok = ok("MPI_Iallreduce 2 of 2", MPI_Iallreduce(a, e, 3, MPI_FLOAT, MPI_SUM,
                                                               MPI_COMM_WORLD, &two[1]));
  if (!d_ok) expect_null("MPI_Iallreduce 1 of 2", two[0]);
  if (!e_ok) expect_null("MPI_Iallreduce 2 of 2", two[1]);
  if (ok("MPI_Waitall", MPI_Waitall(2, two, MPI_STATUSES_IGNORE))) {
    if (d_ok) expect_equal("MPI_Iallreduce 1 of 2", d, a, 3);
    if (e_ok) expect_equal("MPI_Iallreduce 2 of 2", e, a, 3);
  }
  // Persistent: started and waited for, then started and completed by MPI_Testany (MPICH
  // 4.0.2's MPI_Testall answers MPI_ERR_IN_STATUS, with no error in the status, for a
  // persistent collective request of its own, passed through).
  MPI_Request p = MPI_REQUEST_NULL;
  float f[3] = {};
  if (ok("MPI_Allreduce_init", MPI_Allreduce_init(a, f, 3, MPI_FLOAT, MPI_SUM, dup,
                                                  MPI_INFO_NULL, &p))) {
    if (ok("MPI_Start", MPI_Start(&p)) &&
        ok("MPI_Wait (persistent)", MPI_Wait(&p, MPI_STATUS_IGNORE))) {
      expect_equal("MPI_Allreduce_init, MPI_Wait", f, a, 3);
    }
    std::memset(f, 0, sizeof f);
    if (ok("MPI_Start again", MPI_Start(&p))) {
      int flag = 0;
      for (int i = 0; i < 1000000 && !flag; ++i) {
        int index = MPI_UNDEFINED;
        if (!ok("MPI_Testany", MPI_Testany(1, &p, &index, &flag, MPI_STATUS_IGNORE))) break;
      }
      if (flag) expect_equal("MPI_Allreduce_init, MPI_Testany", f, a, 3);
    }
    ok("MPI_Request_free (persistent)", MPI_Request_free(&p));
  } else {
    expect_null("MPI_Allreduce_init", p);
  }
  ok("MPI_Comm_free", MPI_Comm_free(&dup));
  if (MPI_Finalize() != MPI_SUCCESS) bad("MPI_Finalize");
  if (open_fds() != fds) bad("file descriptors left open after MPI_Finalize");
  // A request freed before completion ended by MPI_Finalize at the latest.
  if (orphaned) expect_equal("MPI_Iallreduce (freed)", g_orphan_out, g_orphan_in, 5);
  g_inside.store(false);
  if (g_k >= 0 && g_seen.load() <= g_k) {  // no k-th allocation: a run without failures
    if (g_errors > 0) bad("a run without a failed allocation returned errors");
    return g_bad ? kFailed : kNotReached;
  }
  std::fflush(stdout);
  return g_bad ? kFailed : g_errors > 0 ? kErrors : kClean;
}

// Runs the child for k; its outcome, or kFailed (said) if it did not end normally.
Outcome run(long k) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    std::printf("FAILED fork\n");
    return kFailed;
  }
  if (pid == 0) {
    g_k = k;
    const Outcome o = child();
    std::fflush(stdout);
    _exit(o);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    std::printf("FAILED waitpid (k=%ld)\n", k);
    return kFailed;
  }
  if (WIFSIGNALED(status)) {
    std::printf("k=%ld: FAILED the process ended by signal %d (%s)\n", k, WTERMSIG(status),
                strsignal(WTERMSIG(status)));
    return kFailed;
  }
  return static_cast<Outcome>(WEXITSTATUS(status));
}

// --ranks, under mpiexec -n 2 (or more): only rank 1's allocations fail, from the k-th (in a
// row as above), while the ranks dup MPI_COMM_WORLD, allreduce on the dup (its libcollx
// communicator's creation, the one-shot and the two-shot) and free it; the others' never
// fail. Every call must return on every rank (alarm: a rank left waiting for a peer that
// failed before it joined is a hang), with the exact sum or an allowed error (the others',
// their peer's failure: any of MPI_ERR_NO_MEM or MPI_ERR_OTHER). The ranks agree through
// PMPI (not intercepted) when rank 1 reached no k-th allocation. Prints "N passed, N failed"
// on rank 0.
int ranks() {
  setenv("COLLX_TIMEOUT", "0.3", 1);  // how long a rank waits for one that failed
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // (a rank the alarm ends says what it saw)
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  g_first_no_mem = rank == 1;
  int passed = 0, failed = 0;
  const char* only = std::getenv("PMPI_OOM_K");  // that k alone
  for (const long in_a_row : {1L, 4L}) {
    long k = only != nullptr ? std::atol(only) : 0, with_errors = 0;
    for (; k < 5000; ++k) {
      alarm(30);  // (the default action ends the process, and mpiexec the job)
      g_k = k;
      g_errors = 0;
      g_bad = false;
      MPI_Comm dup = MPI_COMM_NULL;
      MPI_Comm_dup(MPI_COMM_WORLD, &dup);  // (inherits MPI_ERRORS_RETURN)
      if (rank == 1) {
        g_seen = 0;
        fail_from(k, in_a_row);
        g_inside.store(true);
      }
      for (const int n : {3, kBig}) {
        fill(g_in, n, static_cast<float>(rank));
        for (int i = 0; i < n; ++i) {  // (rank r adds r + i % 13)
          g_want[i] = static_cast<float>(size * (i % 13) + size * (size - 1) / 2);
        }
        if (ok("MPI_Allreduce in place", MPI_Allreduce(MPI_IN_PLACE, g_in, n, MPI_FLOAT,
                                                       MPI_SUM, dup))) {
          expect_equal("MPI_Allreduce in place", g_in, g_want, n);
        }
      }
      ok("MPI_Comm_free", MPI_Comm_free(&dup));
      g_inside.store(false);
      fail_none();
      // [0]: rank 1 reached no k-th allocation (MAX of 0 and it); [1]: some check failed.
      int mine[2] = {rank == 1 && g_seen.load() <= k ? 1 : 0, g_bad ? 1 : 0}, all[2] = {};
      PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      int errors = 0;
      PMPI_Allreduce(&g_errors, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (all[0] != 0) {
        if (errors > 0) {
          if (rank == 0) std::printf("FAILED a run without a failed allocation returned errors\n");
          ++failed;
        }
        break;
      }
      (all[1] != 0 ? failed : passed)++;
      if (errors > 0) ++with_errors;
      if (only != nullptr) break;
    }
    alarm(0);
    if (rank == 0) {
      if (k == 0) {
        std::printf("FAILED no allocation of rank 1 was counted\n");
        ++failed;
      }
      std::printf("%ld in a row: %ld allocations of rank 1 failed in turn, %ld runs returned "
                  "errors\n", in_a_row, k, with_errors);
    }
  }
  MPI_Finalize();
  if (rank == 0) std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  g_verbose = std::getenv("PMPI_OOM_VERBOSE") != nullptr;
  if (argc == 2 && std::strcmp(argv[1], "--ranks") == 0) return ranks();
  int passed = 0, failed = 0;
  if (const char* one = std::getenv("PMPI_OOM_K")) {
    if (const char* n = std::getenv("PMPI_OOM_RUN")) g_in_a_row = std::atol(n);
    const Outcome o = run(std::atol(one));
    std::printf("k=%s: outcome %d\n", one, o);
    return o == kFailed ? 1 : 0;
  }
  // First without failures: every call succeeds, and the preload allocated (it is loaded).
  const Outcome first = run(1L << 40);
  (first == kNotReached ? passed : failed)++;
  if (first != kNotReached) std::printf("FAILED the run without failures (outcome %d)\n", first);
  // Each allocation failing in turn; then from each on, 4 in a row (a failure while another
  // is handled).
  const char* n = std::getenv("PMPI_OOM_RUN");
  for (const long in_a_row : n != nullptr ? std::vector<long>{std::atol(n)}
                                          : std::vector<long>{1, 4}) {
    g_in_a_row = in_a_row;
    long k = 0, with_errors = 0;
    for (; k < 5000; ++k) {
      const Outcome o = run(k);
      if (o == kNotReached) break;
      (o == kFailed ? failed : passed)++;
      if (o == kErrors) ++with_errors;
    }
    if (k == 0) {
      std::printf("FAILED no allocation was counted: is libcollx_mpi.so in LD_PRELOAD?\n");
      ++failed;
    }
    if (with_errors == 0) {
      std::printf("FAILED no run returned an error\n");
      ++failed;
    }
    std::printf("%ld in a row: %ld allocations failed in turn, %ld runs returned errors\n",
                in_a_row, k, with_errors);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
