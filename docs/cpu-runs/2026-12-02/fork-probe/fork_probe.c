#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  int x = r + 1, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  pid_t pid = fork();
  if (pid == 0) {
    if (r == 0) { int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); printf("child rc %d y %d\n", rc, y); }
    fflush(stdout); _exit(0);
  }
  int bad = 0;
  for (int i = 0; i < 10; ++i) { x = i * 10 + r; MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); if (y != i * 20 + 1) ++bad; }
  int st; waitpid(pid, &st, 0);
  printf("rank %d bad %d child %d\n", r, bad, st);
  MPI_Finalize();
}
