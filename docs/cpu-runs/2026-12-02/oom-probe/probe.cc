#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include "collx/collx.h"
static std::atomic<long> g_count{0}, g_fail_at{0};
static bool should_fail() {
  long n = g_count.fetch_add(1) + 1;
  long f = g_fail_at.load();
  return f > 0 && n == f;
}
void* operator new(size_t n) { if (should_fail()) throw std::bad_alloc(); void* p = std::malloc(n ? n : 1); if (!p) throw std::bad_alloc(); return p; }
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { if (should_fail()) return nullptr; return std::malloc(n ? n : 1); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { if (should_fail()) return nullptr; return std::malloc(n ? n : 1); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
static int ag(const void* s, void* r, size_t b, void*) { __builtin_memcpy(r, s, b); return 0; }
int main(int argc, char** argv) {
  long at = argc > 1 ? atol(argv[1]) : 0;
  g_count = 0; g_fail_at = at;
  collx_status_t st = collx_init();
  printf("init %d %s\n", st, collx_last_error());
  collx_comm_params_t p{}; p.rank = 0; p.size = 1; p.allgather = ag;
  collx_comm_t c = nullptr;
  st = collx_comm_create(&p, &c);
  printf("create %d %s\n", st, collx_last_error());
  float x[1000] = {1};
  if (c) { st = collx_allreduce(x, x, 1000, COLLX_FLOAT32, COLLX_SUM, c); printf("ar %d\n", st);
    collx_request_t r; st = collx_iallreduce(x, x, 1000, COLLX_FLOAT32, COLLX_SUM, c, &r); printf("iar %d\n", st);
    if (st == 0) { st = collx_wait(&r); printf("wait %d\n", st); }
    st = collx_comm_destroy(c); printf("destroy %d\n", st); }
  st = collx_finalize(); printf("fin %d\n", st);
  printf("allocations: %ld\n", g_count.load());
}
