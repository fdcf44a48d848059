// When the kernels of N processes on one GPU start, once the processes have left one host
// barrier together: the spread of their start times on the GPU's global timer (%globaltimer,
// one clock for every process on the GPU), beside the spread of the barrier exits on the
// host's monotonic clock. The one-kernel allreduce (cuda/flags.h) cannot end before its last
// rank's kernel has started, so at N ranks under MPS this spread is part of its latency.
// Each process launches a kernel of `blocks` blocks (as the one-kernel allreduce launches
// several) that stamps the time its first block starts, and synchronizes its stream.
//
// Usage: cuda_launch_skew [N [iterations [blocks]]]   (forks N-1 processes; run under MPS)
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>
#include <vector>

namespace {

__global__ void stamp(volatile uint64_t* out) {
  if (threadIdx.x != 0) return;
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  if (blockIdx.x == 0) *out = t;
}

uint64_t host_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct Shared {
  std::atomic<uint64_t> arrived;
  std::atomic<int> failed;
};

// All n processes arrive `round` times: the round-th arrival waits for everyone's.
void barrier(Shared* s, int n, uint64_t round) {
  s->arrived.fetch_add(1);
  while (s->arrived.load() < round * static_cast<uint64_t>(n)) {
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double p90(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() * 9 / 10];
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 8;
  const int iters = argc > 2 ? atoi(argv[2]) : 2000;
  const int blocks = argc > 3 ? atoi(argv[3]) : 16;
  if (n < 1 || n > 64 || iters < 10 || blocks < 1) {
    std::fprintf(stderr, "usage: cuda_launch_skew [N (1-64) [iterations (>= 10) [blocks]]]\n");
    return 2;
  }
  const size_t cells = static_cast<size_t>(iters) * static_cast<size_t>(n);
  const size_t bytes = sizeof(Shared) + 3 * cells * sizeof(uint64_t);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  auto* sh = new (mem) Shared{};
  auto* exit_ns = reinterpret_cast<uint64_t*>(sh + 1);  // [iteration][rank], host clock
  uint64_t* start_ns = exit_ns + cells;                  // GPU clock
  uint64_t* done_ns = start_ns + cells;                  // host clock, after the synchronize
  int rank = 0;
  for (int r = 1; r < n; ++r) {
    if (fork() == 0) {
      rank = r;
      break;
    }
  }
  cudaStream_t s;
  uint64_t* word = nullptr;
  const cudaError_t made = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (made == cudaErrorNoDevice || made == cudaErrorInsufficientDriver) sh->failed.store(2);
  bool ok = made == cudaSuccess &&
            cudaHostAlloc(&word, sizeof *word, cudaHostAllocMapped) == cudaSuccess;
  for (int i = 0; ok && i < 200; ++i) {  // warm up
    stamp<<<blocks, 32, 0, s>>>(word);
    ok = cudaStreamSynchronize(s) == cudaSuccess;
  }
  if (!ok && sh->failed.load() == 0) sh->failed.store(1);
  uint64_t round = 1;
  barrier(sh, n, round++);
  for (int it = 0; it < iters; ++it) {  // every rank runs every round, even after a failure
    barrier(sh, n, round++);
    const size_t at = static_cast<size_t>(it) * static_cast<size_t>(n) + static_cast<size_t>(rank);
    exit_ns[at] = host_ns();
    if (ok) {
      stamp<<<blocks, 32, 0, s>>>(word);
      if (cudaStreamSynchronize(s) != cudaSuccess) sh->failed.store(1);
    }
    done_ns[at] = host_ns();
    start_ns[at] = ok ? *word : 0;
  }
  barrier(sh, n, round++);
  if (rank != 0) return 0;
  while (wait(nullptr) > 0) {
  }
  if (sh->failed.load() == 2) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  if (sh->failed.load() != 0) {
    std::printf("FAILED: a CUDA call failed (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  // Per iteration: the spread of kernel starts and of barrier exits, the slowest rank's
  // barrier-to-synchronized time; per rank: how late its kernel starts after the first.
  std::vector<double> gpu_spread, host_spread, slowest;
  std::vector<std::vector<double>> late(static_cast<size_t>(n));
  for (int it = iters / 10; it < iters; ++it) {  // the first tenth is left out as warm-up
    const uint64_t* e = exit_ns + static_cast<size_t>(it) * n;
    const uint64_t* g = start_ns + static_cast<size_t>(it) * n;
    const uint64_t* d = done_ns + static_cast<size_t>(it) * n;
    const uint64_t g0 = *std::min_element(g, g + n), e0 = *std::min_element(e, e + n);
    gpu_spread.push_back((*std::max_element(g, g + n) - g0) / 1e3);
    host_spread.push_back((*std::max_element(e, e + n) - e0) / 1e3);
    slowest.push_back((*std::max_element(d, d + n) - e0) / 1e3);
    for (int r = 0; r < n; ++r) late[static_cast<size_t>(r)].push_back((g[r] - g0) / 1e3);
  }
  std::printf("# %d processes on one GPU, %d iterations (the first tenth left out), kernels of "
              "%d blocks; us: median, p90\n", n, iters, blocks);
  std::printf("kernel starts spread (GPU globaltimer)   %8.2f %8.2f\n", median(gpu_spread),
              p90(gpu_spread));
  std::printf("barrier exits spread (host)              %8.2f %8.2f\n", median(host_spread),
              p90(host_spread));
  std::printf("barrier to last rank synchronized (host) %8.2f %8.2f\n", median(slowest),
              p90(slowest));
  std::printf("per rank, its kernel's start after the first (median):");
  for (int r = 0; r < n; ++r) std::printf(" %.2f", median(late[static_cast<size_t>(r)]));
  std::printf("\n");
  return 0;
}
