// Device-buffer allreduce under MPI: libcollx on cudaMalloc'd buffers against what users of an
// MPI that is not CUDA-aware do (copy to pinned host memory, MPI_Allreduce in place there, copy
// back, wait), in the same run and on the same buffers:
//   mpiexec -n N cuda_mpi_bench [min_bytes:]max_bytes [--direct]
// float32 sum, in place, sizes growing by 4x (4 B to 4 MiB by default). Per size, five rounds
// alternate a timed loop of each; a rank's time is its median round, the table shows the
// slowest rank's. After the timing, one call of each on fresh inputs is checked bitwise against
// the exact result. --direct adds a checked MPI_Allreduce on the device buffer itself (a
// CUDA-aware MPI, or libcollx's PMPI preload). Exits 77 without a GPU.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collx/collx.h"
#include "collx/collx_mpi.h"
#include "bench_util.h"
#include "common/cuda_ok.h"
#include "common/pattern.h"

namespace {

constexpr int kRounds = 5;

double slowest(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

// Fresh inputs (the tests' pattern), copied to the device buffer.
void fill(float* dev, size_t count, int rank) {
  std::vector<float> h(count);
  collx::test::fill_input(COLLX_FLOAT32, COLLX_SUM, rank, count, h.data());
  CUDA_OK(cudaMemcpy(dev, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
}

// 0 when dev holds the exact result over p ranks of fill()'s inputs, bitwise.
int check(const float* dev, size_t count, int p) {
  std::vector<float> h(count), want(count);
  CUDA_OK(cudaMemcpy(h.data(), dev, count * sizeof(float), cudaMemcpyDeviceToHost));
  collx::test::fill_expected(COLLX_FLOAT32, COLLX_SUM, p, count, want.data());
  return std::memcmp(h.data(), want.data(), count * sizeof(float)) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  size_t min_bytes = 4, max_bytes = size_t{4} << 20;
  const bool direct = argc > 2 && std::string(argv[2]) == "--direct";
  if (argc > 1) {
    const std::string a = argv[1];
    const size_t c = a.find(':');
    if (c != std::string::npos) min_bytes = std::strtoull(a.substr(0, c).c_str(), nullptr, 10);
    max_bytes = std::strtoull(a.substr(c == std::string::npos ? 0 : c + 1).c_str(), nullptr, 10);
  }
  if (min_bytes < 4 || max_bytes < min_bytes || max_bytes > (size_t{1} << 30) ||
      argc > (direct ? 3 : 2)) {
    if (rank == 0) {
      std::fprintf(stderr, "usage: %s [min_bytes:]max_bytes [--direct] (4 B to 1 GiB)\n", argv[0]);
    }
    MPI_Finalize();
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    if (rank == 0) std::printf("SKIP: no CUDA device\n");
    MPI_Finalize();
    return 77;
  }
  CUDA_OK(cudaSetDevice(rank % devices));
  collx_comm_t comm = nullptr;
  if (collx_init() != COLLX_SUCCESS || collx_comm_create_mpi(MPI_COMM_WORLD, &comm) != COLLX_SUCCESS) {
    std::fprintf(stderr, "rank %d: %s\n", rank, collx_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  float* dev = nullptr;
  float* host = nullptr;
  CUDA_OK(cudaMalloc(&dev, max_bytes));
  CUDA_OK(cudaMallocHost(&host, max_bytes));
  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    const std::string v(version, static_cast<size_t>(len));
    std::printf("# device allreduce, %d ranks on %d GPU(s), float32 sum, in place; median of %d "
                "rounds, slowest rank\n", p, std::min(p, devices), kRounds);
    std::printf("# staged: cudaMemcpy to pinned host, MPI_Allreduce, cudaMemcpy back: %s\n",
                v.substr(0, v.find('\n')).c_str());
    std::printf("%-10s %12s %14s %12s %8s\n", "# Size", "collx_us", "staged_mpi_us",
                "staged/collx", "check");
    std::fflush(stdout);
  }
  int failures = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    const int iters = static_cast<int>(std::clamp<size_t>((size_t{64} << 20) / bytes, 5, 200));
    auto run_collx = [&](int n) {
      for (int i = 0; i < n; ++i) {
        if (collx_allreduce(COLLX_IN_PLACE, dev, count, COLLX_FLOAT32, COLLX_SUM, comm) !=
            COLLX_SUCCESS) {
          std::fprintf(stderr, "rank %d: %s\n", rank, collx_last_error());
          MPI_Abort(MPI_COMM_WORLD, 1);
        }
      }
    };
    // MPI_Allreduce on the device buffer itself: for a CUDA-aware MPI, or libcollx's PMPI
    // preload (LD_PRELOAD=libcollx_mpi.so), which takes device pointers.
    auto run_direct = [&](int n) {
      for (int i = 0; i < n; ++i) {
        MPI_Allreduce(MPI_IN_PLACE, dev, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      }
    };
    auto run_staged = [&](int n) {
      for (int i = 0; i < n; ++i) {
        CUDA_OK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
        MPI_Allreduce(MPI_IN_PLACE, host, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        CUDA_OK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
      }
    };
    run_collx(3);
    run_staged(3);
    std::vector<double> t_collx, t_staged;
    for (int r = 0; r < kRounds; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      run_collx(iters);
      t_collx.push_back((MPI_Wtime() - t0) * 1e6 / iters);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      run_staged(iters);
      t_staged.push_back((MPI_Wtime() - t0) * 1e6 / iters);
    }
    // One checked call of each on fresh inputs.
    fill(dev, count, rank);
    run_collx(1);
    int bad = check(dev, count, p);
    fill(dev, count, rank);
    run_staged(1);
    bad |= check(dev, count, p) << 1;
    if (direct) {
      fill(dev, count, rank);
      run_direct(1);
      bad |= check(dev, count, p) << 2;
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    const double c = slowest(collx::bench::median(t_collx));
    const double s = slowest(collx::bench::median(t_staged));
    if (rank == 0) {
      const char* verdict = any == 0 ? "ok" : "FAILED";
      std::printf("%-10zu %12.2f %14.2f %12.2f %8s (%d)\n", bytes, c, s, s / c, verdict, any);
      std::fflush(stdout);
    }
    if (any != 0) ++failures;
    if (bytes > max_bytes / 4) break;  // no overflow past max
  }
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFreeHost(host));
  if (collx_comm_destroy(comm) != COLLX_SUCCESS || collx_finalize() != COLLX_SUCCESS) ++failures;
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
