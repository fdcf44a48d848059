// End of the MPI test programs: sums every rank's pass/fail counts, prints
// "N passed, N failed" on rank 0, finalizes MPI and returns this rank's exit status.
#pragma once

#include <mpi.h>

#include <cstdio>

namespace collx::test {

inline int mpi_finish(int passed, int failed) {
  int local[2] = {passed, failed}, sum[2] = {0, 0}, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Reduce(local, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%d passed, %d failed\n", sum[0], sum[1]);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}

}  // namespace collx::test
