// GPU reduction kernel bandwidth against the device-to-device copy bandwidth measured in the
// same run: float32 and bfloat16 sum of 2 and 8 inputs, 64 and 256 MiB per buffer. Bytes
// counted: every input read and the output written (a copy: one read, one write). CUDA events,
// 5 warm-up launches, median of 21. At 64 MiB also with every buffer one element past a
// 16-byte boundary ("+1": packed after a scalar head, cuda/reduce.h), and with input k k
// elements further on ("+1+k": the scalar kernel alone). Exits 77 where no CUDA device is
// present.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/cuda_ok.h"
#include "cuda/reduce.h"

namespace {

template <typename F>
double median_ms(F&& launch) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i) launch();
  std::vector<float> ms;
  for (int i = 0; i < 21; ++i) {
    CUDA_OK(cudaEventRecord(a));
    launch();
    CUDA_OK(cudaEventRecord(b));
    CUDA_OK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_OK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s\n# %-10s %-8s %7s %6s %14s %14s %8s\n", prop.name, "dtype", "inputs",
              "MiB", "offset", "kernel GB/s", "D2D copy GB/s", "ratio");
  for (size_t mib : {64, 256}) {
    const size_t bytes = mib << 20;
    constexpr size_t kSlack = 64;  // room for the offsets
    std::vector<char*> bufs(9);
    for (auto& p : bufs) {
      CUDA_OK(cudaMalloc(&p, bytes + kSlack));
      CUDA_OK(cudaMemset(p, 0, bytes + kSlack));
    }
    const double copy_ms = median_ms([&] {
      CUDA_OK(cudaMemcpyAsync(bufs[0], bufs[1], bytes, cudaMemcpyDeviceToDevice));
    });
    const double copy_gbs = 2.0 * bytes / (copy_ms * 1e6);
    for (collx_dtype_t dt : {COLLX_FLOAT32, COLLX_BFLOAT16}) {
      const size_t es = collx_dtype_size(dt);
      for (int n : {2, 8}) {
        for (int shape = 0; shape < (mib == 64 ? 3 : 1); ++shape) {
          const size_t offset = shape == 0 ? 0 : es;
          const void* in[8];
          for (int k = 0; k < n; ++k) in[k] = bufs[k + 1] + offset + (shape == 2 ? k * es : 0);
          const size_t count = bytes / es;
          const double ms = median_ms([&] {
            CUDA_OK(static_cast<cudaError_t>(collx::cuda::reduce(
                bufs[0] + offset, in, n, count, dt, COLLX_SUM, n, nullptr)));
          });
          const double gbs = (n + 1.0) * bytes / (ms * 1e6);
          const char* shapes[] = {"0", "+1", "+1+k"};
          std::printf("  %-10s %-8d %7zu %6s %14.1f %14.1f %8.2f\n", collx_dtype_name(dt), n,
                      mib, shapes[shape], gbs, copy_gbs, gbs / copy_gbs);
        }
      }
    }
    for (auto p : bufs) CUDA_OK(cudaFree(p));
  }
  return 0;
}
