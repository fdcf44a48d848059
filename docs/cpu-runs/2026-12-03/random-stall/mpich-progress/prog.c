// Does a progress call on ranks 1..p-1 advance MPICH's own non-blocking allreduce?
// prog MODE: 0 MPI_Iprobe, 1 MPI_Test on a pending generalized request, 2 nothing
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int query(void* s, MPI_Status* st) { MPI_Status_set_elements(st, MPI_BYTE, 0); MPI_Status_set_cancelled(st, 0); st->MPI_SOURCE = MPI_UNDEFINED; st->MPI_TAG = MPI_UNDEFINED; return MPI_SUCCESS; }
static int freef(void* s) { return MPI_SUCCESS; }
static int cancelf(void* s, int c) { return MPI_SUCCESS; }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, mode = atoi(argv[1]);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Op op = MPI_MAXLOC;
  int in[2] = {rank, rank}, out[2];
  MPI_Request g; MPI_Grequest_start(query, freef, cancelf, NULL, &g);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int round = 0; round < 3; ++round) {
    MPI_Request r;
    double t0 = MPI_Wtime();
    MPI_Iallreduce(in, out, 1, MPI_2INT, op, MPI_COMM_WORLD, &r);
    if (rank == 0) {
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      printf("mode %d round %d: rank 0 waited %.3f s\n", mode, round, MPI_Wtime() - t0);
    } else {
      while (MPI_Wtime() - t0 < 1.0) {
        int flag;
        if (mode == 0) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        else if (mode == 1) MPI_Test(&g, &flag, MPI_STATUS_IGNORE);
      }
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Grequest_complete(g); MPI_Wait(&g, MPI_STATUS_IGNORE);
  MPI_Finalize();
}
