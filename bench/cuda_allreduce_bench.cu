// Device-buffer allreduce on one GPU machine, over forked ranks (no MPI needed):
//   cuda_allreduce_bench N [max_bytes]
// N ranks share the GPUs round robin (several ranks per GPU when N exceeds them). Each rank
// holds three communicators: one over CUDA IPC at every size through the kernels that read
// the peers' buffers (one-shot, two-shot; COLLX_CUDA_FLAGS_MAX=0), one with COLLX_CUDA=0 (host
// staging), and one with the defaults (the one kernel per call up to COLLX_CUDA_FLAGS_MAX
// under MPS, staging below COLLX_CUDA_IPC_MIN*), and times float32
// sum on cudaMalloc'd buffers from 4 B to max_bytes (64 MiB by default) on all three in the
// same run: per size, the median over 5 repetitions of the mean time per call, the slowest
// rank's. A fourth column (host_us) times the staging communicator on pinned host buffers: the
// host algorithms alone, so that staged_us - host_us is what the copies add. Bus bandwidth is
// 2(p-1)/p * bytes / time; the copy bandwidth it is compared with is rank 0's cudaMemcpy
// device-to-device of 64 MiB (bytes copied / time) measured in the same run before the sweep,
// printed with the copies to and from pinned host memory. The first call on fresh buffers,
// which opens the peers' allocations, is timed on its own against the steady state: the IPC
// cache's saving per call. Exits 77 without a GPU.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collx/collx.h"
#include "common/board.h"
#include "common/cuda_ok.h"

using namespace collx::test;

namespace {

constexpr int kReps = 5;

// The slowest rank's value.
double slowest(double v, Group& g) {
  double all[kMaxRanks];
  if (board_allgather(&v, all, sizeof v, &g) != 0) std::exit(1);
  return *std::max_element(all, all + g.size);
}

// Median over kReps of the mean time per call, in microseconds.
double time_calls(collx_comm_t c, float* buf, size_t count, Group& g) {
  const size_t bytes = count * sizeof(float);
  const int iters = static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / (bytes + 1), 5, 200));
  auto call = [&] {
    if (collx_allreduce(COLLX_IN_PLACE, buf, count, COLLX_FLOAT32, COLLX_SUM, c) != COLLX_SUCCESS) {
      std::fprintf(stderr, "rank %d: %s\n", g.rank, collx_last_error());
      std::exit(1);
    }
  };
  for (int i = 0; i < 3; ++i) call();
  std::vector<double> reps;
  for (int r = 0; r < kReps; ++r) {
    if (board_barrier(g) != 0) std::exit(1);
    const double t0 = now();
    for (int i = 0; i < iters; ++i) call();
    reps.push_back(slowest((now() - t0) / iters * 1e6, g));
  }
  std::sort(reps.begin(), reps.end());
  return reps[kReps / 2];
}

// Rank 0's copy bandwidth, 64 MiB, median of 10 after 2 warm-ups (bytes copied / time):
// device to device, or between the device and pinned host memory (the staging path's copies).
double copy_bandwidth(cudaMemcpyKind kind) {
  const size_t bytes = size_t{64} << 20;
  void *dev = nullptr, *other = nullptr;
  const bool host = kind != cudaMemcpyDeviceToDevice;
  CUDA_OK(cudaMalloc(&dev, bytes));
  CUDA_OK(host ? cudaMallocHost(&other, bytes) : cudaMalloc(&other, bytes));
  void* dst = kind == cudaMemcpyHostToDevice ? dev : other;
  const void* src = kind == cudaMemcpyHostToDevice ? other : dev;
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    CUDA_OK(cudaEventRecord(e0));
    CUDA_OK(cudaMemcpyAsync(dst, src, bytes, kind));
    CUDA_OK(cudaEventRecord(e1));
    CUDA_OK(cudaEventSynchronize(e1));
    float t = 0;
    CUDA_OK(cudaEventElapsedTime(&t, e0, e1));
    if (i >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  CUDA_OK(cudaFree(dev));
  CUDA_OK(host ? cudaFreeHost(other) : cudaFree(other));
  return static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

// kIpc: CUDA IPC at every size, without the one-kernel path (which copies into areas mapped
// once, so it would open no fresh buffer); kStaged: COLLX_CUDA=0; kAuto: the defaults.
enum Mode { kIpc, kStaged, kAuto };

collx_comm_t make_comm(Group& g, Mode mode) {
  if (mode == kStaged) setenv("COLLX_CUDA", "0", 1);
  if (mode == kIpc) {
    setenv("COLLX_CUDA_IPC_MIN", "0", 1);
    setenv("COLLX_CUDA_IPC_MIN_TIMESLICED", "0", 1);
    setenv("COLLX_CUDA_FLAGS_MAX", "0", 1);
  }
  collx_comm_t c = nullptr;
  collx_comm_params_t params{g.rank, g.size, board_allgather, &g};
  if (collx_comm_create(&params, &c) != COLLX_SUCCESS) {
    std::fprintf(stderr, "rank %d: %s\n", g.rank, collx_last_error());
    std::exit(1);
  }
  for (const char* v : {"COLLX_CUDA", "COLLX_CUDA_IPC_MIN", "COLLX_CUDA_IPC_MIN_TIMESLICED",
                        "COLLX_CUDA_FLAGS_MAX"}) {
    unsetenv(v);
  }
  return c;
}

int run_rank(Board* board, int rank, int p, size_t max_bytes) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  CUDA_OK(cudaSetDevice(rank % devices));
  Group g{board, rank, p};
  if (collx_init() != COLLX_SUCCESS) return 1;
  double copy_gbs = 0, d2h_gbs = 0, h2d_gbs = 0;
  if (rank == 0) {
    copy_gbs = copy_bandwidth(cudaMemcpyDeviceToDevice);
    d2h_gbs = copy_bandwidth(cudaMemcpyDeviceToHost);
    h2d_gbs = copy_bandwidth(cudaMemcpyHostToDevice);
  }
  collx_comm_t ipc = make_comm(g, kIpc), staged = make_comm(g, kStaged), dflt = make_comm(g, kAuto);
  float* buf = nullptr;
  CUDA_OK(cudaMalloc(&buf, std::max<size_t>(max_bytes, 4)));
  CUDA_OK(cudaMemset(buf, 0, std::max<size_t>(max_bytes, 4)));
  float* host = nullptr;  // pinned: the host algorithms alone, as staging runs them per chunk
  CUDA_OK(cudaMallocHost(&host, std::max<size_t>(max_bytes, 4)));
  std::memset(host, 0, std::max<size_t>(max_bytes, 4));
  CUDA_OK(cudaDeviceSynchronize());
  if (rank == 0) {
    std::printf("# libcollx device allreduce: %d ranks on %d GPU(s), float32 sum, in place\n", p,
                std::min(p, devices));
    std::printf("# D2D copy (rank 0, 64 MiB): %.1f GB/s; to pinned host memory %.1f GB/s, "
                "from it %.1f GB/s\n",
                copy_gbs, d2h_gbs, h2d_gbs);
    std::printf("%-10s %12s %12s %10s %14s %10s %12s %12s\n", "# Size", "ipc_us", "staged_us",
                "staged/ipc", "ipc_busbw_GBs", "busbw/copy", "default_us", "host_us");
  }
  for (size_t bytes = 4; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    const double t_ipc = time_calls(ipc, buf, count, g);
    const double t_staged = time_calls(staged, buf, count, g);
    const double t_default = time_calls(dflt, buf, count, g);
    const double t_host = time_calls(staged, host, count, g);
    if (rank == 0) {
      const double busbw = 2.0 * (p - 1) / p * static_cast<double>(bytes) / (t_ipc * 1e-6) / 1e9;
      std::printf("%-10zu %12.2f %12.2f %10.2f %14.2f %10.3f %12.2f %12.2f\n", bytes, t_ipc,
                  t_staged, t_staged / t_ipc, busbw, busbw / copy_gbs, t_default, t_host);
      std::fflush(stdout);
    }
  }
  // The IPC cache: the first call on fresh buffers opens the peers' allocations.
  const size_t count = (size_t{1} << 20) / sizeof(float);
  float* fresh = nullptr;
  CUDA_OK(cudaMalloc(&fresh, count * sizeof(float)));
  CUDA_OK(cudaMemset(fresh, 0, count * sizeof(float)));
  CUDA_OK(cudaDeviceSynchronize());
  if (board_barrier(g) != 0) return 1;
  const double t0 = now();
  if (collx_allreduce(COLLX_IN_PLACE, fresh, count, COLLX_FLOAT32, COLLX_SUM, ipc) != 0) return 1;
  const double first = slowest((now() - t0) * 1e6, g);
  const double steady = time_calls(ipc, fresh, count, g);
  if (rank == 0) {
    std::printf("# IPC, 1 MiB on fresh buffers: first call %.1f us (opens the peers' "
                "allocations), then %.1f us per call: %.1f us saved per call by the cache\n",
                first, steady, first - steady);
  }
  CUDA_OK(cudaFree(fresh));
  CUDA_OK(cudaFree(buf));
  CUDA_OK(cudaFreeHost(host));
  if (collx_comm_destroy(ipc) != COLLX_SUCCESS || collx_comm_destroy(staged) != COLLX_SUCCESS ||
      collx_comm_destroy(dflt) != COLLX_SUCCESS) {
    return 1;
  }
  collx_finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int p = argc > 1 ? std::atoi(argv[1]) : 2;
  const size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : size_t{64} << 20;
  if (p < 2 || p > kMaxRanks || max_bytes < 4) {
    std::fprintf(stderr, "usage: %s [ranks 2-%d] [max bytes]\n", argv[0], kMaxRanks);
    return 2;
  }
  const std::vector<int> rcs =
      fork_ranks(p, [&](Board* board, int r) { return run_rank(board, r, p, max_bytes); });
  if (rcs.empty()) return 1;
  const int worst = *std::max_element(rcs.begin(), rcs.end());
  if (worst == 77) std::printf("SKIP: no CUDA device\n");
  return worst;
}
