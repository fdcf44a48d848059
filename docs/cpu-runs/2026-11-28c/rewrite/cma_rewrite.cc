// Record (not built by meson): process A writes one byte per cache line of its buffer (with a
// second argument: rewrite) or not, then process B reads the buffer with process_vm_readv;
// 2000 turns. g++ -O2 cma_rewrite.cc && ./a.out BYTES [rewrite]. Output: cma_rewrite.txt.
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
// A writes its buffer (one store per line), B reads it via process_vm_readv; ping-pong via shared flags.
int main(int argc, char** argv) {
  size_t n = argc > 1 ? atol(argv[1]) : 65536;
  int iters = 2000;
  auto* sh = (std::atomic<long>*)mmap(nullptr, 4096, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  sh[0] = 0; sh[8] = 0;
  uint8_t* buf = (uint8_t*)aligned_alloc(4096, n); memset(buf, 1, n);
  sh[16] = (long)buf;
  pid_t a = getpid();
  pid_t b = fork();
  if (b == 0) {
    uint8_t* dst = (uint8_t*)aligned_alloc(4096, n); memset(dst, 0, n);
    double t = 0;
    for (int i = 1; i <= iters; ++i) {
      while (sh[0].load() < i) {}
      auto t0 = std::chrono::steady_clock::now();
      iovec l{dst, n}, r{(void*)sh[16].load(), n};
      if (process_vm_readv(a, &l, 1, &r, 1, 0) != (ssize_t)n) { perror("cma"); _exit(1); }
      t += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      sh[8].store(i);
    }
    printf("read  %zu: %.2f us\n", n, t / iters);
    fflush(stdout);
    _exit(0);
  }
  double t = 0;
  bool rewrite = argc > 2;
  for (int i = 1; i <= iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (rewrite) for (size_t k = 0; k < n; k += 64) { volatile uint8_t* p = buf + k; *p = *p; }
    t += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    sh[0].store(i);
    while (sh[8].load() < i) {}
  }
  waitpid(b, nullptr, 0);
  printf("write %zu: %.2f us (rewrite %d)\n", n, t / iters, rewrite);
}
