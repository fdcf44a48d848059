// Decomposes the one-kernel allreduce's floor: launch + sync vs launch + host spin on a mapped word.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <unistd.h>
#include <sys/wait.h>
__global__ void empty() {}
__global__ void signal(volatile int* w, int v) {
  if (threadIdx.x == 0 && blockIdx.x == 0) { __threadfence_system(); *w = v; }
}
static double now() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
template <class F> double med(F f, int n = 3000) {
  std::vector<double> t(n);
  for (int i = 0; i < 200; ++i) f(i);
  for (int i = 0; i < n; ++i) { double a = now(); f(i + 1000); t[i] = now() - a; }
  std::sort(t.begin(), t.end());
  return t[n / 2];
}
int main(int argc, char** argv) {
  int procs = argc > 1 ? atoi(argv[1]) : 1;
  for (int p = 1; p < procs; ++p) if (fork() == 0) break; 
  cudaStream_t s; cudaStreamCreate(&s);
  int* w; cudaHostAlloc(&w, 4, cudaHostAllocMapped | cudaHostAllocPortable); *w = 0;
  double a = med([&](int) { empty<<<1, 32, 0, s>>>(); cudaStreamSynchronize(s); });
  double d = med([&](int) { empty<<<16, 256, 0, s>>>(); cudaStreamSynchronize(s); });
  double b = med([&](int i) { signal<<<1, 32, 0, s>>>(w, i); while (*(volatile int*)w != i) {} });
  cudaStreamSynchronize(s);
  double c = med([&](int) { empty<<<1, 32, 0, s>>>(); });
  cudaStreamSynchronize(s);
  cudaEvent_t e; cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  double f = med([&](int) { empty<<<1, 32, 0, s>>>(); cudaEventRecord(e, s); cudaEventSynchronize(e); });
  printf("pid %d procs %d: launch+sync %.2f, 16x256 launch+sync %.2f, launch+spin %.2f, launch only %.2f, launch+event sync %.2f us\n", getpid(), procs, a, d, b, c, f);
  while (wait(nullptr) > 0) {}
  return 0;
}
