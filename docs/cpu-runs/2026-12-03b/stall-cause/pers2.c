// Rank 0 waits (MPI_Waitsome) for MPICH's persistent allreduce (MPI_CHAR bxor, 37725, in
// place) while ranks 1..p-1 spend 2 s calling MPI_Iprobe: MODE 0 once per ms (the preload's
// outer progress), 1 in a tight loop, 2 never; with SPINNERS threads per rank polling with
// sched_yield (libcollx's workers in a shared-memory wait).
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
static volatile int stop = 0;
static int query(void* s, MPI_Status* st) { return MPI_SUCCESS; }
static int freef(void* s) { return MPI_SUCCESS; }
static int cancelf(void* s, int c) { return MPI_SUCCESS; }
static int sleepy = 0;
static void* spin(void* a) {
  struct timespec t = {0, 100000};
  while (!stop) { if (sleepy) nanosleep(&t, NULL); else sched_yield(); }
  return NULL;
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, mode = atoi(argv[1]), spinners = abs(atoi(argv[2])), n = 37725;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  sleepy = atoi(argv[2]) < 0;
  char* buf = calloc(n, 1);
  MPI_Request pr;
  MPI_Allreduce_init(MPI_IN_PLACE, buf, n, MPI_CHAR, MPI_BXOR, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
  MPI_Request g;
  MPI_Grequest_start(query, freef, cancelf, NULL, &g);
  pthread_t th[8];
  int fd = open("/dev/shm/pers2flag", O_RDWR | O_CREAT, 0600);
  ftruncate(fd, 64);
  volatile int* done = mmap(NULL, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (rank == 0) *done = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int round = 0; round < atoi(argv[3]); ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Start(&pr);
    if (rank == 0) {
      int outcount, idx;
      MPI_Waitsome(1, &pr, &outcount, &idx, MPI_STATUSES_IGNORE);
      *done = round;
      printf("mode %d spinners %d round %d: rank 0 waited %.3f s\n", mode, spinners, round,
             MPI_Wtime() - t0);
      fflush(stdout);
    } else {
      stop = 0;
      for (int i = 0; i < spinners; ++i) pthread_create(&th[i], NULL, spin, NULL);
      while (MPI_Wtime() - t0 < 30.0 && *done != round) {
        int flag;
        if (mode == 0) {
          struct timespec ms = {0, 1000000};
          nanosleep(&ms, NULL);
        }
        if (mode == 4) {
          struct timespec ms = {0, 1000000};
          nanosleep(&ms, NULL);
          MPI_Test(&g, &flag, MPI_STATUS_IGNORE);
        }
        if (mode == 3) {
          struct timespec ms = {0, 1000000};
          nanosleep(&ms, NULL);
          MPI_Test(&pr, &flag, MPI_STATUS_IGNORE);
        }
        if (mode < 2) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      }
      stop = 1;
      for (int i = 0; i < spinners; ++i) pthread_join(th[i], NULL);
      MPI_Wait(&pr, MPI_STATUS_IGNORE);
    }
  }
  MPI_Request_free(&pr);
  MPI_Grequest_complete(g);
  MPI_Wait(&g, MPI_STATUS_IGNORE);
  MPI_Finalize();
}
