// The stall's pattern through the preload: every round all ranks start MPICH's own persistent
// allreduce (a user-defined op: passed through); rank 0 waits for it in MPI_Waitsome, then
// joins ranks 1-3, which have gone on to two MPI_Iallreduce (two duplicates of the world,
// served: their workers wait for rank 0) and an MPI_Allreduce on the world (served: the main
// thread waits for rank 0, calling MPI_Iprobe once per ms). "waited": rank 0's MPI_Waitsome.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static void sum(void* in, void* inout, int* len, MPI_Datatype* t) {
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, rounds = atoi(argv[1]), n = 65536;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Op op;
  MPI_Op_create(sum, 1, &op);
  MPI_Comm d[2];
  MPI_Comm_dup(MPI_COMM_WORLD, &d[0]);
  MPI_Comm_dup(MPI_COMM_WORLD, &d[1]);
  int* pbuf = calloc(n, sizeof(int));
  float *a = calloc(n, 4), *b = calloc(n, 4), *c = calloc(n, 4);
  MPI_Request pr;
  MPI_Allreduce_init(MPI_IN_PLACE, pbuf, n, MPI_INT, op, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
  for (int round = 0; round < rounds; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Start(&pr);
    if (rank == 0) {
      int outcount, idx;
      MPI_Status st[1];
      MPI_Waitsome(1, &pr, &outcount, &idx, st);
      printf("round %d: rank 0 waited %.3f s\n", round, MPI_Wtime() - t0);
      fflush(stdout);
    }
    MPI_Request r[2];
    MPI_Iallreduce(MPI_IN_PLACE, a, n, MPI_FLOAT, MPI_SUM, d[0], &r[0]);
    MPI_Iallreduce(MPI_IN_PLACE, b, n, MPI_FLOAT, MPI_SUM, d[1], &r[1]);
    MPI_Allreduce(MPI_IN_PLACE, c, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    if (rank != 0) MPI_Wait(&pr, MPI_STATUS_IGNORE);
  }
  MPI_Request_free(&pr);
  MPI_Comm_free(&d[0]);
  MPI_Comm_free(&d[1]);
  MPI_Finalize();
}
