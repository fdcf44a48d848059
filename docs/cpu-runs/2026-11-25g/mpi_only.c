// MPI_Allreduce alone (no libcollx in the process): float32 sum, same sizes/iterations as
// collx_osu above 8 KiB (100 iterations, 10 warm-up, 5 rounds, median round).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void* a, const void* b) { double x = *(double*)a, y = *(double*)b; return x < y ? -1 : x > y; }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  size_t sizes[] = {65536, 1048576, 4194304};
  for (int si = 0; si < 3; ++si) {
    size_t n = sizes[si] / 4;
    float* s = malloc(n * 4); float* r = malloc(n * 4);
    for (size_t i = 0; i < n; ++i) s[i] = (float)(i % 7);
    double t[5];
    for (int round = 0; round < 5; ++round) {
      for (int i = 0; i < 10; ++i) MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < 100; ++i) MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      t[round] = (MPI_Wtime() - t0) / 100 * 1e6;
    }
    qsort(t, 5, sizeof t[0], cmp);
    if (rank == 0) printf("%zu %.2f\n", sizes[si], t[2]);
    free(s); free(r);
  }
  MPI_Finalize();
}
