// create / one allreduce / destroy cycles: per-cycle time (max over ranks), median and max
#include <mpi.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "collx/collx.h"
#include "collx/collx_mpi.h"
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int n = argc > 1 ? atoi(argv[1]) : 20;
  collx_init();
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double a = MPI_Wtime();
    collx_comm_t c;
    if (collx_comm_create_mpi(MPI_COMM_WORLD, &c) != COLLX_SUCCESS) { fprintf(stderr, "create: %s\n", collx_last_error()); return 1; }
    int x = 1;
    collx_allreduce(COLLX_IN_PLACE, &x, 1, COLLX_INT32, COLLX_SUM, c);
    collx_comm_destroy(c);
    double mine = MPI_Wtime() - a, worst;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.push_back(worst);
  }
  double f0 = MPI_Wtime();
  collx_finalize();
  double fin = MPI_Wtime() - f0, finmax;
  MPI_Allreduce(&fin, &finmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::sort(t.begin(), t.end());
  if (rank == 0) printf("cycles %d: median %.4f s, max %.4f s, total %.2f s; collx_finalize max %.4f s\n", n, t[n / 2], t.back(), [&]{double s=0; for(double v:t) s+=v; return s;}(), finmax);
  MPI_Finalize();
}
