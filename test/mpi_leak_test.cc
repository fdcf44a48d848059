// Creating and destroying many communicators, and many allreduces of random sizes over every
// algorithm, leave open file descriptors and resident memory flat (within a tolerance).
//   mpiexec -n 2 mpi_leak_test [communicators] [allreduces]
// Prints "N passed, N failed".
#include <dirent.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"
#include "common/mpi_finish.h"
#include "common/scoped_env.h"

using collx::test::ScopedEnv;

namespace {

int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

// Shared-memory segments of libcollx named in /dev/shm (none: they are memfds).
int shm_segments() {
  int n = 0;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, "collx-", 6) == 0;
  closedir(d);
  return n;
}

// Mappings of the process (a segment that stays mapped after its communicator is gone leaks).
int mappings() {
  FILE* f = std::fopen("/proc/self/maps", "r");
  int n = 0;
  for (int c; f != nullptr && (c = std::fgetc(f)) != EOF;) n += c == '\n';
  if (f != nullptr) std::fclose(f);
  return n;
}

long rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::atol(line + 6);
  }
  if (f != nullptr) std::fclose(f);
  return kib;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int comms = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 100000;
  int rank = 0, passed = 0, failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto expect = [&](bool ok, const char* what) {
    ok ? ++passed : ++failed;
    if (!ok) std::fprintf(stderr, "rank %d: FAILED %s (%s)\n", rank, what, collx_last_error());
  };
  expect(collx_init() == COLLX_SUCCESS, "init");

  // Warm up first (UCX allocates pools on first use), then measure.
  auto churn = [&](int n) {
    for (int i = 0; i < n; ++i) {
      collx_comm_t c = nullptr;
      if (collx_comm_create_mpi(MPI_COMM_WORLD, &c) != COLLX_SUCCESS) return false;
      int x = 1;
      if (collx_allreduce(COLLX_IN_PLACE, &x, 1, COLLX_INT32, COLLX_SUM, c) != COLLX_SUCCESS) return false;
      if (collx_comm_destroy(c) != COLLX_SUCCESS) return false;
    }
    return true;
  };
  expect(churn(20), "create/destroy warm-up");
  const int fds0 = open_fds(), maps0 = mappings();
  const long rss0 = rss_kib();
  expect(churn(comms), "create/destroy");
  const int fds1 = open_fds(), maps1 = mappings();
  const long rss1 = rss_kib();
  expect(fds1 == fds0, "file descriptors flat across communicator churn");
  expect(maps1 - maps0 < 8, "memory mappings flat across communicator churn");
  expect(shm_segments() == 0, "no shared-memory segment left in /dev/shm");
  expect(rss1 - rss0 < 16 * 1024, "resident memory flat across communicator churn (< 16 MiB)");
  if (rank == 0) {
    std::printf("%d communicators: fds %d -> %d, mappings %d -> %d, RSS %ld -> %ld KiB\n", comms,
                fds0, fds1, maps0, maps1, rss0, rss1);
  }

  // Random sizes (up to 1 MiB) over each algorithm, same sequence on every rank.
  const char* algos[] = {"recursive_doubling", "rabenseifner", "ring"};
  std::vector<collx_comm_t> cs;
  for (const char* a : algos) {
    ScopedEnv algo("COLLX_ALLREDUCE_ALGO", a);
    collx_comm_t c = nullptr;
    expect(collx_comm_create_mpi(MPI_COMM_WORLD, &c) == COLLX_SUCCESS, "create per algorithm");
    cs.push_back(c);
  }
  std::vector<float> buf(1 << 18);
  auto run = [&](int n, unsigned seed) {
    std::mt19937 rng(seed);
    for (int i = 0; i < n; ++i) {
      const size_t count = rng() % 2 ? rng() % 64 : rng() % buf.size();
      if (collx_allreduce(COLLX_IN_PLACE, buf.data(), count, COLLX_FLOAT32, COLLX_MAX,
                          cs[static_cast<size_t>(i) % cs.size()]) != COLLX_SUCCESS) {
        return false;
      }
    }
    return true;
  };
  expect(run(300, 1), "allreduce warm-up");
  const int fds2 = open_fds();
  const long rss2 = rss_kib();
  expect(run(calls, 2), "random allreduces");
  const int fds3 = open_fds();
  const long rss3 = rss_kib();
  expect(fds3 == fds2, "file descriptors flat across allreduces");
  expect(rss3 - rss2 < 16 * 1024, "resident memory flat across allreduces (< 16 MiB)");
  if (rank == 0) std::printf("%d allreduces: fds %d -> %d, RSS %ld -> %ld KiB\n", calls, fds2, fds3, rss2, rss3);
  for (collx_comm_t c : cs) expect(collx_comm_destroy(c) == COLLX_SUCCESS, "destroy");
  expect(collx_finalize() == COLLX_SUCCESS, "finalize");

  return collx::test::mpi_finish(passed, failed);
}
