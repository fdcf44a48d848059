// Ranks whose settings differ (run with per-rank environments, mpiexec's ":" syntax):
//   mpi_settings_test CODE TEXT VAR
// collx_comm_create must fail on every rank with status CODE (a collx_strerror text) and a
// message containing TEXT, at creation (never a collective that waits until the deadline);
// then each rank unsets VAR, and a second creation and one checked allreduce must succeed.
// Prints "N passed, N failed".
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"
#include "common/mpi_finish.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_settings_test CODE TEXT VAR\n");
    MPI_Finalize();
    return 2;
  }
  int passed = 0, failed = 0;
  const auto check = [&](bool ok, const char* what) {
    ok ? ++passed : ++failed;
    if (!ok) std::fprintf(stderr, "rank %d: FAILED: %s (%s)\n", rank, what, collx_last_error());
  };

  check(collx_init() == COLLX_SUCCESS, "collx_init");
  collx_comm_t comm = nullptr;
  collx_status_t st = collx_comm_create_mpi(MPI_COMM_WORLD, &comm);
  check(std::strcmp(collx_strerror(st), argv[1]) == 0, "the creation's status");
  check(std::strstr(collx_last_error(), argv[2]) != nullptr, "the creation's message");
  check(comm == nullptr, "no communicator");
  if (rank == 0) std::printf("rank 0: %s: %s\n", collx_strerror(st), collx_last_error());

  // Alike now: the next creation works, and so does an allreduce on it.
  unsetenv(argv[3]);
  st = collx_comm_create_mpi(MPI_COMM_WORLD, &comm);
  check(st == COLLX_SUCCESS, "the second creation");
  if (st == COLLX_SUCCESS) {
    std::vector<int> v(1000, rank + 1);
    check(collx_allreduce(COLLX_IN_PLACE, v.data(), v.size(), COLLX_INT32, COLLX_SUM, comm) ==
              COLLX_SUCCESS,
          "the allreduce");
    bool right = true;
    for (int x : v) right = right && x == size * (size + 1) / 2;
    check(right, "the allreduce's result");
    check(collx_comm_destroy(comm) == COLLX_SUCCESS, "collx_comm_destroy");
  }
  check(collx_finalize() == COLLX_SUCCESS, "collx_finalize");
  return collx::test::mpi_finish(passed, failed);
}
