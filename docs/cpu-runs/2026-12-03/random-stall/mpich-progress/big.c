// Does MPI_Iprobe on ranks 1..p-1 advance MPICH's persistent allreduce of N ints with a
// user-defined op?  big N MODE (0 Iprobe, 2 nothing)
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static void sum(void* in, void* inout, int* len, MPI_Datatype* t) {
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n = atoi(argv[1]), mode = atoi(argv[2]);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Op op; MPI_Op_create(sum, 1, &op);
  int* buf = calloc(n, sizeof(int));
  MPI_Request pr;
  MPI_Allreduce_init(MPI_IN_PLACE, buf, n, MPI_INT, op, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
  for (int round = 0; round < 3; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Start(&pr);
    if (rank == 0) {
      MPI_Wait(&pr, MPI_STATUS_IGNORE);
      printf("n %d mode %d round %d: rank 0 waited %.3f s\n", n, mode, round, MPI_Wtime() - t0);
    } else {
      while (MPI_Wtime() - t0 < 1.0) {
        int flag;
        if (mode == 0) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      }
      MPI_Wait(&pr, MPI_STATUS_IGNORE);
    }
  }
  MPI_Request_free(&pr);
  MPI_Finalize();
}
