// A probe (by hand, 2026-12-02): allocations on the calling thread through operator new and
// malloc/calloc/realloc, for 40 blocking calls and 20 iallreduce + wait after warm-up, per
// algorithm and size, 2 ranks. Build and run (from the repository root, release build):
//   c++ -std=c++20 -O2 -g -Iinclude docs/cpu-runs/2026-12-02/alloc-probe/alloc_probe.cc \
//     -o /tmp/alloc_probe $(pkg-config --cflags --libs mpich) -Lbuild/lib -lcollx \
//     -Wl,-rpath,$PWD/build/lib && mpiexec -n 2 /tmp/alloc_probe
#include <mpi.h>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <execinfo.h>
#include <unistd.h>
#include <vector>
#include <string>
#include "collx/collx.h"
#include "collx/collx_mpi.h"
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
static thread_local long t_news = 0, t_mallocs = 0;
static thread_local bool t_on = false;
static thread_local bool t_in = false;  // COUNT_TRACE=1: a backtrace per counted allocation
static void trace() { if (t_in || !getenv("COUNT_TRACE")) return; t_in = true; void* b[20]; int n = backtrace(b, 20); backtrace_symbols_fd(b, n, 2); write(2, "--\n", 3); t_in = false; }
extern "C" void* malloc(size_t n) { if (t_on && !t_in) { ++t_mallocs; trace(); } return __libc_malloc(n); }
extern "C" void* calloc(size_t a, size_t b) { if (t_on) ++t_mallocs; return __libc_calloc(a, b); }
extern "C" void* realloc(void* p, size_t n) { if (t_on) ++t_mallocs; return __libc_realloc(p, n); }
void* operator new(size_t n) { if (t_on && !t_in) { ++t_news; trace(); } void* p = __libc_malloc(n ? n : 1); if (!p) throw std::bad_alloc(); return p; }
void operator delete(void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank); collx_init();
  const char* algos[] = {"recursive_doubling", "rabenseifner", "ring", "shm_one_shot", "shm_two_shot", "shm_cma", nullptr};
  for (const char** a = algos; *a; ++a) {
    setenv("COLLX_ALLREDUCE_ALGO", *a, 1);
    collx_comm_t c;
    if (collx_comm_create_mpi(MPI_COMM_WORLD, &c) != COLLX_SUCCESS) { printf("create %s failed: %s\n", *a, collx_last_error()); continue; }
    for (size_t count : {1ul, 1000ul, 100000ul, 4000000ul}) {
      std::vector<float> s(count, 1.0f), r(count);
      for (int i = 0; i < 3; ++i) collx_allreduce(s.data(), r.data(), count, COLLX_FLOAT32, COLLX_SUM, c);
      t_news = t_mallocs = 0; t_on = true;
      int bad = 0;
      for (int i = 0; i < 20; ++i) bad |= collx_allreduce(s.data(), r.data(), count, COLLX_FLOAT32, COLLX_SUM, c);
      for (int i = 0; i < 20; ++i) bad |= collx_allreduce(COLLX_IN_PLACE, r.data(), count, COLLX_FLOAT32, COLLX_SUM, c);
      t_on = false;
      collx_request_t q;
      t_news = 0; long m0 = t_mallocs;
      long nb_news = 0, nb_m = 0;
      for (int i = 0; i < 3; ++i) { collx_iallreduce(s.data(), r.data(), count, COLLX_FLOAT32, COLLX_SUM, c, &q); collx_wait(&q);} 
      t_on = true;
      long n0 = t_news; m0 = t_mallocs;
      for (int i = 0; i < 20; ++i) { bad |= collx_iallreduce(s.data(), r.data(), count, COLLX_FLOAT32, COLLX_SUM, c, &q); bad |= collx_wait(&q);} 
      t_on = false;
      nb_news = t_news - n0; nb_m = t_mallocs - m0;
      printf("rank %d %-18s count %8zu: blocking 40 calls: %ld new, %ld malloc; iallreduce+wait 20: %ld new, %ld malloc%s\n", rank, *a, count, n0, m0, nb_news, nb_m, bad ? " ERROR" : "");
    }
    collx_comm_destroy(c);
  }
  collx_finalize(); MPI_Finalize();
}
