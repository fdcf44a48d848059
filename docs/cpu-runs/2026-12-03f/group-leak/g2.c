/* Two threads per process, each on its own dup of MPI_COMM_WORLD, make groups and
 * communicators from them and free everything, N times: no libcollx, nothing left to
 * MPI_Finalize. Run under LeakSanitizer (the runtime preloaded). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rounds;

static void* work(void* arg) {
  MPI_Comm dup = *(MPI_Comm*)arg;
  for (int i = 0; i < rounds; ++i) {
    MPI_Group all, some;
    MPI_Comm made;
    int ranks[2] = {1, 0};
    MPI_Comm_group(dup, &all);
    MPI_Group_incl(all, 2, ranks, &some);
    MPI_Comm_create_group(dup, some, 7, &made);
    MPI_Group_free(&some);
    MPI_Group_free(&all);
    MPI_Comm_free(&made);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided != MPI_THREAD_MULTIPLE) return 1;
  rounds = argc > 1 ? atoi(argv[1]) : 100;
  const int threads = argc > 2 ? atoi(argv[2]) : 2;
  MPI_Comm dups[2];
  pthread_t t[2];
  for (int k = 0; k < threads; ++k) MPI_Comm_dup(MPI_COMM_WORLD, &dups[k]);
  for (int k = 0; k < threads; ++k) pthread_create(&t[k], NULL, work, &dups[k]);
  for (int k = 0; k < threads; ++k) pthread_join(t[k], NULL);
  for (int k = 0; k < threads; ++k) MPI_Comm_free(&dups[k]);
  MPI_Finalize();
  return 0;
}
