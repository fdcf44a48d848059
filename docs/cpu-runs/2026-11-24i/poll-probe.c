// Probe of poll-based completion under the preload (PERFORMANCE.md, "Completion by polling"):
//   mpicc -O2 poll-probe.c -o poll-probe
//   mpiexec -n 2 env LD_PRELOAD=$PWD/build/lib/pmpi/libcollx_mpi.so ./poll-probe wait|pwait|waitany|waitall|test
// prints the time per MPI_Iallreduce of one int + its completion, three times (rank 0).
#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* how = argc > 1 ? argv[1] : "wait";
  const int n = 2000;
  for (int rep = 0; rep < 3; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      int x = i; MPI_Request r; int idx, flag = 0;
      MPI_Iallreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
      if (!strcmp(how, "wait")) MPI_Wait(&r, MPI_STATUS_IGNORE);
      else if (!strcmp(how, "pwait")) PMPI_Wait(&r, MPI_STATUS_IGNORE);
      else if (!strcmp(how, "waitany")) MPI_Waitany(1, &r, &idx, MPI_STATUS_IGNORE);
      else if (!strcmp(how, "waitall")) MPI_Waitall(1, &r, MPI_STATUSES_IGNORE);
      else while (!flag) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    }
    double t1 = MPI_Wtime();
    if (rank == 0) printf("%s: %.2f us\n", how, (t1 - t0) / n * 1e6);
  }
  MPI_Finalize();
}
