// GPU reduction kernels (see reduce.h). A grid-stride loop in which each thread loads 16 bytes
// of every input for each of its packs, combines them left to right in registers and stores 16
// bytes: one pass over the inputs and the output, whatever their number, so the kernel runs at
// memory bandwidth.
#include "cuda/reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/pack.h"
#include "reduce/dtype.h"
#include "reduce/half.h"
#include "reduce/ops.h"

namespace collx::cuda {

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;

struct Inputs {
  const void* p[kMaxInputs];
  int n;
};

// Each thread handles kUnroll packs per round, kThreads apart (so that a warp's accesses stay
// contiguous), and issues the loads of all of them before combining: four times the loads in
// flight of one pack per round, which a runtime number of inputs would otherwise serialise.
constexpr int kUnroll = 4;

// kAvg: the sum divided by `ranks` before it is stored, as the CPU's finalize does it (the
// same divide_by on the same T, so the same bits), in the same pass.
template <typename T, typename Op, int V, bool kAvg>
__global__ void reduce_kernel(T* dst, Inputs in, size_t packs, int ranks) {
  using P = Pack<T, V>;
  const size_t round = static_cast<size_t>(gridDim.x) * kThreads * kUnroll;
  for (size_t at = static_cast<size_t>(blockIdx.x) * kThreads * kUnroll + threadIdx.x;
       at < packs; at += round) {
    P acc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = at + static_cast<size_t>(u) * kThreads;
      if (i < packs) acc[u] = static_cast<const P*>(in.p[0])[i];
    }
    for (int k = 1; k < in.n; ++k) {
      P x[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const size_t i = at + static_cast<size_t>(u) * kThreads;
        if (i < packs) x[u] = static_cast<const P*>(in.p[k])[i];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int j = 0; j < V; ++j) acc[u].e[j] = combine<Op>(acc[u].e[j], x[u].e[j]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = at + static_cast<size_t>(u) * kThreads;
      if (i >= packs) continue;
      if constexpr (kAvg) {
#pragma unroll
        for (int j = 0; j < V; ++j) acc[u].e[j] = divide_by(acc[u].e[j], ranks);
      }
      reinterpret_cast<P*>(dst)[i] = acc[u];
    }
  }
}

// reduce_kernel's grid: each block covers kThreads * kUnroll packs per round.
unsigned reduce_blocks(size_t packs) {
  const size_t per_block = static_cast<size_t>(kThreads) * kUnroll;
  return static_cast<unsigned>(std::min((packs + per_block - 1) / per_block, kMaxBlocks));
}

template <typename T, typename Op, bool kAvg>
int launch(void* dst, const void* const* in, int n, size_t count, int ranks, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const ReduceSplit split = reduce_split(dst, in, n, count, sizeof(T));
  // Elements [from, from + len) by the kernel of W-element packs (len a multiple of W).
  const auto run = [&](auto packed, size_t from, size_t len) {
    constexpr int W = decltype(packed)::value;
    Inputs ins{};
    ins.n = n;
    for (int k = 0; k < n; ++k) ins.p[k] = static_cast<const T*>(in[k]) + from;
    reduce_kernel<T, Op, W, kAvg><<<reduce_blocks(len / W), kThreads, 0, s>>>(
        static_cast<T*>(dst) + from, ins, len / W, ranks);
  };
  if (split.head > 0) run(std::integral_constant<int, 1>{}, 0, split.head);
  if (split.packs > 0) run(std::integral_constant<int, V>{}, split.head, split.packs * V);
  if (split.tail > 0) run(std::integral_constant<int, 1>{}, count - split.tail, split.tail);
  return static_cast<int>(cudaGetLastError());
}

template <typename T>
int dispatch(void* dst, const void* const* in, int n, size_t count, collx_op_t op, int ranks,
             cudaStream_t s) {
  int err = static_cast<int>(cudaErrorInvalidValue);
  with_op<T>(op, [&](auto o) {
    using Op = decltype(o);
    if constexpr (std::is_same_v<Op, Sum> && !std::is_integral_v<T>) {  // avg's types
      if (op == COLLX_AVG) {
        err = launch<T, Op, true>(dst, in, n, count, ranks, s);
        return;
      }
    }
    err = launch<T, Op, false>(dst, in, n, count, ranks, s);
  });
  return err;
}

}  // namespace

int reduce(void* dst, const void* const* in, int n, size_t count, collx_dtype_t dtype,
           collx_op_t op, int ranks, void* stream) {
  if (n < 1 || n > kMaxInputs || ranks < 1) return static_cast<int>(cudaErrorInvalidValue);
  if (count == 0) return static_cast<int>(cudaSuccess);
  auto s = static_cast<cudaStream_t>(stream);
  int result = static_cast<int>(cudaErrorInvalidValue);
  with_dtype(dtype, [&](auto tag) {
    result = dispatch<decltype(tag)>(dst, in, n, count, op, ranks, s);
  });
  return result;
}

const char* error_string(int cuda_error) {
  return cudaGetErrorString(static_cast<cudaError_t>(cuda_error));
}

}  // namespace collx::cuda
