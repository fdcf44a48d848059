// Does MPI_Iprobe inside an attribute delete callback (MODE 0) or a generalized request's
// wait_fn under MPI_Waitall (MODE 1) on ranks 1..p-1 advance MPICH's own allreduce?
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static double t0;
static void spin(void) {
  while (MPI_Wtime() - t0 < 1.0) {
    int flag;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }
}
static int del(MPI_Comm c, int k, void* v, void* x) { spin(); return MPI_SUCCESS; }
static MPI_Request g;
static int query(void* s, MPI_Status* st) { MPI_Status_set_elements(st, MPI_BYTE, 0); MPI_Status_set_cancelled(st, 0); return MPI_SUCCESS; }
static int freef(void* s) { return MPI_SUCCESS; }
static int cancelf(void* s, int c) { return MPI_SUCCESS; }
static int pollf(void* s, MPI_Status* st) { return MPI_SUCCESS; }
static int waitf(int n, void** s, double t, MPI_Status* st) { spin(); MPI_Grequest_complete(g); return MPI_SUCCESS; }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, mode = atoi(argv[1]);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int in[2] = {rank, rank}, out[2];
  int key; MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, &key, NULL);
  for (int round = 0; round < 2; ++round) {
    MPI_Comm d; MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_attr(d, key, NULL);
    MPI_Request r;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_Iallreduce(in, out, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD, &r);
    if (rank == 0) {
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      printf("mode %d round %d: rank 0 waited %.3f s\n", mode, round, MPI_Wtime() - t0);
      MPI_Comm_delete_attr(d, key);
    } else if (mode == 0) {
      MPI_Comm_delete_attr(d, key);  // spins in the callback
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      MPIX_Grequest_start(query, freef, cancelf, pollf, waitf, NULL, &g);
      MPI_Request two[2] = {g, r};
      MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
      MPI_Comm_delete_attr(d, key);
    }
    MPI_Comm_free(&d);
  }
  MPI_Finalize();
}
