#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int query(void* s, MPI_Status* st) { MPI_Status_set_elements(st, MPI_BYTE, 0); MPI_Status_set_cancelled(st, 0); return MPI_SUCCESS; }
static int freef(void* s) { free(s); return MPI_SUCCESS; }
static int cancelf(void* s, int c) { return MPI_SUCCESS; }
static int pollf(void* s, MPI_Status* st) { return MPI_SUCCESS; }
static int waitf(int n, void** s, double t, MPI_Status* st) { return MPI_SUCCESS; }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int n = 200000;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      MPI_Request r; int flag = 0;
      MPIX_Grequest_start(query, freef, cancelf, pollf, waitf, malloc(64), &r);
      MPI_Test(&r, &flag, MPI_STATUS_IGNORE);  /* not complete: poll + progress */
      MPI_Grequest_complete(r);
      MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
      if (!flag) { printf("not done\n"); return 1; }
    }
    double t1 = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      MPI_Request r; int flag = 0;
      MPIX_Grequest_start(query, freef, cancelf, pollf, waitf, malloc(64), &r);
      MPI_Grequest_complete(r);
      MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    }
    double t2 = MPI_Wtime();
    for (int i = 0; i < n; ++i) { int flag; MPI_Request r = MPI_REQUEST_NULL; MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE); }
    double t3 = MPI_Wtime();
    printf("start+test(not done)+complete+test: %.3f us; start+complete+test: %.3f us; iprobe (progress): %.3f us\n",
           (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, (t3 - t2) / n * 1e6);
  }
  MPI_Finalize();
}
