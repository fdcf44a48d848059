// A probe (by hand, 2026-12-02): the system calls of 20 blocking calls after warm-up, per
// algorithm and size, between two markers (a write to fd -1), under strace, 2 ranks:
//   c++ -std=c++20 -O2 -Iinclude sys_probe.cc -o /tmp/sys_probe $(pkg-config --cflags --libs mpich) \
//     -Lbuild/lib -lcollx -Wl,-rpath,$PWD/build/lib
//   mpiexec -n 2 strace -f -o /tmp/st -ff /tmp/sys_probe   (then count.sh on each rank's file)
#include <mpi.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "collx/collx.h"
#include "collx/collx_mpi.h"
static void mark(const char* s) { (void)!write(-1, s, strlen(s)); }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank); collx_init();
  const char* algos[] = {"recursive_doubling", "rabenseifner", "ring", "shm_one_shot", "shm_two_shot", "shm_cma", nullptr};
  for (const char** a = algos; *a; ++a) {
    setenv("COLLX_ALLREDUCE_ALGO", *a, 1);
    collx_comm_t c;
    if (collx_comm_create_mpi(MPI_COMM_WORLD, &c) != COLLX_SUCCESS) continue;
    for (size_t count : {1ul, 1000ul, 100000ul, 4000000ul}) {
      std::vector<float> s(count, 1.0f), r(count);
      for (int i = 0; i < 3; ++i) collx_allreduce(s.data(), r.data(), count, COLLX_FLOAT32, COLLX_SUM, c);
      char m[100]; snprintf(m, sizeof m, "BEGIN %s %zu", *a, count); mark(m);
      for (int i = 0; i < 20; ++i) collx_allreduce(s.data(), r.data(), count, COLLX_FLOAT32, COLLX_SUM, c);
      mark("END");
    }
    collx_comm_destroy(c);
  }
  collx_finalize(); MPI_Finalize();
}
