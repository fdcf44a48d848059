#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>
#include <algorithm>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void* alloc(size_t n, bool huge) {
  void* p = mmap(nullptr, n, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0);
  return p;
}
int main(int argc, char** argv) {
  const size_t N = 8u << 20; bool huge = argc > 1 && atoi(argv[1]);
  size_t chunk = argc > 2 ? atol(argv[2]) : 256 << 10;
  // source in a child process: private anonymous, touched
  int pfd[2]; pipe(pfd); int qfd[2]; pipe(qfd);
  pid_t pid = fork();
  if (pid == 0) {
    void* src; posix_memalign(&src, 2 << 20, N);
    if (huge) madvise(src, N, MADV_HUGEPAGE);
    memset(src, 1, N);
    write(pfd[1], &src, sizeof src); char c; read(qfd[0], &c, 1); _exit(0);
  }
  void* remote; read(pfd[0], &remote, sizeof remote);
  void *dst, *loc, *buf; posix_memalign(&dst, 2<<20, N); posix_memalign(&loc, 2<<20, N); posix_memalign(&buf, 4096, chunk);
  if (huge) { madvise(dst, N, MADV_HUGEPAGE); madvise(loc, N, MADV_HUGEPAGE); }
  memset(dst, 2, N); memset(loc, 3, N); memset(buf, 0, chunk);
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> a, b, c;
    for (int it = 0; it < 15; ++it) {
      double t0 = now();
      for (size_t off = 0; off < N; off += chunk) {
        iovec l{buf, chunk}, r{(char*)remote + off, chunk};
        process_vm_readv(pid, &l, 1, &r, 1, 0);
      }
      double t1 = now();
      { iovec l{dst, N}, r{remote, N}; process_vm_readv(pid, &l, 1, &r, 1, 0); }
      double t2 = now();
      memcpy(dst, loc, N);
      double t3 = now();
      a.push_back(t1-t0); b.push_back(t2-t1); c.push_back(t3-t2);
    }
    auto med = [](std::vector<double>& v){ std::sort(v.begin(), v.end()); return v[v.size()/2]*1e6; };
    printf("huge=%d chunk=%zu: cma->L2buf %.0f us, cma->8MiB %.0f us, memcpy 8MiB %.0f us\n", huge, chunk, med(a), med(b), med(c));
  }
  write(qfd[1], "x", 1); waitpid(pid, nullptr, 0);
}
