// Times create, N iallreduces waited in reverse order, destroy and collx_finalize per rank; with LATE=s
// rank 0 sleeps s seconds before collx_finalize (how long the others wait for it there).
//   mpiexec -genv LATE 3 -n 1 -env COLLX_NODE node-a late N : -n 1 -env COLLX_NODE node-b late N
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>
#include "collx/collx.h"
#include "collx/collx_mpi.h"
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, p; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &p);
  collx_init();
  double tc = MPI_Wtime(); collx_comm_t c; collx_comm_create_mpi(MPI_COMM_WORLD, &c); fprintf(stderr, "rank %d: create %.3f\n", rank, MPI_Wtime() - tc);
  const int n = argc > 1 ? atoi(argv[1]) : 100;
  std::vector<std::vector<float>> in(n), out(n);
  std::vector<collx_request_t> req(n);
  double t0 = MPI_Wtime();
  for (int i = 0; i < n; ++i) {
    size_t count = (size_t)i * i * 13 + 1;
    in[i].assign(count, 1.f); out[i].assign(count, 0.f);
    collx_iallreduce(in[i].data(), out[i].data(), count, COLLX_FLOAT32, COLLX_SUM, c, &req[i]);
  }
  double t1 = MPI_Wtime();
  for (int i = n - 1; i >= 0; --i) {
    double a = MPI_Wtime();
    collx_wait(&req[i]);
    double b = MPI_Wtime();
    if (b - a > 0.05) fprintf(stderr, "rank %d: wait %d (count %zu, %s) took %.3f s\n", rank, i, in[i].size(), collx_comm_algorithm(c, in[i].size()*4), b - a);
  }
  fprintf(stderr, "rank %d: post %.3f waits %.3f\n", rank, t1 - t0, MPI_Wtime() - t1);
  double td = MPI_Wtime(); collx_comm_destroy(c); fprintf(stderr, "rank %d: destroy %.3f\n", rank, MPI_Wtime() - td); if (rank == 0 && getenv("LATE")) sleep(atoi(getenv("LATE"))); double tf = MPI_Wtime(); collx_finalize(); fprintf(stderr, "rank %d: finalize %.3f\n", rank, MPI_Wtime() - tf); MPI_Finalize();
}
