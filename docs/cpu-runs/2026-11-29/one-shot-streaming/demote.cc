// Handover with and without CLDEMOTE: thread A writes `bytes` into a shared buffer (memcpy,
// then optionally cldemote per line, or streaming stores), thread B copies it out; then B's
// turn ends and A rewrites. Times: A's write (incl. demote), B's read, whole round.
#include <immintrin.h>
#include <pthread.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
using Clock = std::chrono::steady_clock;
static double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count() * 1e6; }
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
__attribute__((target("cldemote"))) static void demote(const char* p, size_t n) { for (size_t i = 0; i < n; i += 64) _cldemote((void*)(p + i)); }
__attribute__((target("avx512f"))) static void stream(char* d, const char* s, size_t n) {
  for (size_t i = 0; i < n; i += 64) _mm512_stream_si512((__m512i*)(d + i), _mm512_load_si512((const __m512i*)(s + i)));
  _mm_sfence();
}
int main(int argc, char** argv) {
  size_t bytes = atol(argv[1]); int mode = atoi(argv[2]);  // 0 plain, 1 demote, 2 stream
  const int R = 2001;
  char *sh = (char*)aligned_alloc(4096, bytes), *src = (char*)aligned_alloc(4096, bytes), *dst = (char*)aligned_alloc(4096, bytes);
  memset(sh, 0, bytes); memset(src, 1, bytes); memset(dst, 2, bytes);
  std::atomic<int> turn{0};
  std::vector<double> w, r, round;
  std::thread b([&] { pin(1); for (int k = 0; k < R; ++k) { while (turn.load(std::memory_order_acquire) != 2*k+1) {} auto t0 = Clock::now(); memcpy(dst, sh, bytes); r.push_back(us(t0, Clock::now())); turn.store(2*k+2, std::memory_order_release);} });
  pin(0);
  auto start = Clock::now();
  for (int k = 0; k < R; ++k) {
    while (turn.load(std::memory_order_acquire) != 2*k) {}
    auto t0 = Clock::now();
    if (k) round.push_back(us(start, t0));
    start = t0;
    src[0] = k;
    if (mode == 2) stream(sh, src, bytes); else memcpy(sh, src, bytes);
    if (mode == 1) demote(sh, bytes);
    w.push_back(us(t0, Clock::now()));
    turn.store(2*k+1, std::memory_order_release);
  }
  b.join();
  printf("bytes %7zu mode %s: write %.2f us, read %.2f us, round %.2f us\n", bytes, mode==0?"plain ":mode==1?"demote":"stream", med(w), med(r), med(round));
}
