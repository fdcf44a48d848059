// The one-kernel allreduce (see flags.h).
#include "cuda/flags.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cuda/pack.h"
#include "reduce/dtype.h"
#include "reduce/half.h"
#include "reduce/ops.h"

namespace collx::cuda {

namespace {

constexpr int kThreads = 256;

// Release and acquire at GPU scope (every rank on this GPU) or system scope.
__device__ inline void store_release(uint64_t* p, uint64_t v, bool one_gpu) {
  if (one_gpu) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  } else {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  }
}

__device__ inline uint64_t load_acquire(const uint64_t* p, bool one_gpu) {
  uint64_t v;
  if (one_gpu) {
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  } else {
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  }
  return v;
}

__device__ inline uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ inline uint64_t* flag(void* area, int block) {
  return static_cast<uint64_t*>(area) + block;
}

// How many of this kernel's blocks have finished (this rank's own; zero between calls).
__device__ inline unsigned* finished(void* area) {
  return reinterpret_cast<unsigned*>(static_cast<uint64_t*>(area) + kFlagsMaxBlocks);
}

// The block's last step: the last block of the grid to get here tells the host, once every
// block's output is written. The output is this GPU's memory, read by work the host queues
// on this GPU after it sees `done`: GPU-scope fences order it (gave_up has its own).
__device__ inline void finish(const FlagsArgs& a) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  unsigned* n = finished(a.areas[a.rank]);
  if (atomicAdd(n, 1u) != gridDim.x - 1) return;
  *n = 0;  // the next call's kernel starts after this one has ended
  __threadfence();
  *reinterpret_cast<volatile uint64_t*>(&a.host->done) = a.seq;
}

template <typename P>
__device__ inline P* slot(void* area, size_t slot_bytes, uint64_t seq) {
  return reinterpret_cast<P*>(static_cast<char*>(area) + kFlagsHeader + (seq % 2) * slot_bytes);
}

// A pack of a peer's slot, read past the L1 cache (which is not coherent with the peer's
// writes), as raw bytes: unpacked into elements only where it is combined (unpack), so that
// packs loaded ahead of their use hold four registers each, whatever the element type.
template <typename P>
__device__ inline uint4 load_fresh(const P* p) {
  static_assert(sizeof(P) == sizeof(uint4));
  return __ldcv(reinterpret_cast<const uint4*>(p));
}

template <typename P>
__device__ inline P unpack(const uint4& raw) {
  P v;
  memcpy(&v, &raw, sizeof v);
  return v;
}

template <typename T, typename Op, bool kAvg>
__global__ void __launch_bounds__(kThreads) flags_kernel(FlagsArgs a) {
  constexpr int V = 16 / sizeof(T);
  using P = Pack<T, V>;
  const size_t packs = (a.count + V - 1) / V;
  const size_t per = (packs + gridDim.x - 1) / gridDim.x;
  const size_t begin = blockIdx.x * per;
  const size_t end = min(packs, begin + per);
  const auto* send = static_cast<const T*>(a.send);
  auto* recv = static_cast<T*>(a.recv);
  const bool send_packed = reinterpret_cast<uintptr_t>(send) % 16 == 0;
  const bool recv_packed = reinterpret_cast<uintptr_t>(recv) % 16 == 0;
  __shared__ int gave_up;
  if (threadIdx.x == 0) gave_up = 0;

  // 1. Chunk b of the input into this rank's slot (the last pack padded with zeros).
  P* mine = slot<P>(a.areas[a.rank], a.slot_bytes, a.seq);
  for (size_t i = begin + threadIdx.x; i < end; i += kThreads) {
    P v;
    if (send_packed && (i + 1) * V <= a.count) {
      v = reinterpret_cast<const P*>(send)[i];
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v.e[j] = i * V + j < a.count ? send[i * V + j] : T{};
    }
    mine[i] = v;
  }
  __syncthreads();
  // 2. Publish it.
  if (threadIdx.x == 0) store_release(flag(a.areas[a.rank], blockIdx.x), a.seq, a.one_gpu);
  // 3. Wait for every peer's chunk b: one thread per peer.
  const int q = static_cast<int>(threadIdx.x);
  if (q < a.ranks && q != a.rank) {
    const uint64_t* f = flag(a.areas[q], blockIdx.x);
    const uint64_t start = global_ns();
    while (load_acquire(f, a.one_gpu) < a.seq) {
      if (global_ns() - start > a.timeout_ns) {
        *reinterpret_cast<volatile int*>(&a.host->gave_up) = q + 1;
        __threadfence_system();  // before `done`, which another thread writes
        gave_up = 1;
        break;
      }
    }
  }
  __syncthreads();
  if (gave_up != 0) return finish(a);
  // 4. Chunk b of every slot, in rank order, into the output. Every rank's pack is loaded
  // before any is combined, so that the loads wait for memory together, not one after
  // another (the rank count is known only at run time); combined left to right as before.
  for (size_t i = begin + threadIdx.x; i < end; i += kThreads) {
    uint4 raw[kFlagsMaxRanks];
#pragma unroll
    for (int k = 0; k < kFlagsMaxRanks; ++k) {
      if (k < a.ranks) raw[k] = load_fresh(slot<P>(a.areas[k], a.slot_bytes, a.seq) + i);
    }
    P acc = unpack<P>(raw[0]);
#pragma unroll
    for (int k = 1; k < kFlagsMaxRanks; ++k) {
      if (k >= a.ranks) break;
      const P x = unpack<P>(raw[k]);
#pragma unroll
      for (int j = 0; j < V; ++j) acc.e[j] = combine<Op>(acc.e[j], x.e[j]);
    }
    if constexpr (kAvg) {
#pragma unroll
      for (int j = 0; j < V; ++j) acc.e[j] = divide_by(acc.e[j], a.ranks);
    }
    if (recv_packed && (i + 1) * V <= a.count) {
      reinterpret_cast<P*>(recv)[i] = acc;
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (i * V + j < a.count) recv[i * V + j] = acc.e[j];
      }
    }
  }
  finish(a);
}

template <typename T>
int launch(const FlagsArgs& a, collx_op_t op, cudaStream_t s) {
  constexpr size_t V = 16 / sizeof(T);
  const size_t packs = (a.count + V - 1) / V;
  if (packs * 16 > a.slot_bytes) return static_cast<int>(cudaErrorInvalidValue);
  const auto blocks = static_cast<unsigned>(
      std::min<size_t>((packs + kThreads - 1) / kThreads, kFlagsMaxBlocks));
  int err = static_cast<int>(cudaErrorInvalidValue);
  with_op<T>(op, [&](auto o) {
    using Op = decltype(o);
    if constexpr (std::is_same_v<Op, Sum> && !std::is_integral_v<T>) {  // avg's types
      if (op == COLLX_AVG) {
        flags_kernel<T, Op, true><<<blocks, kThreads, 0, s>>>(a);
        err = static_cast<int>(cudaGetLastError());
        return;
      }
    }
    flags_kernel<T, Op, false><<<blocks, kThreads, 0, s>>>(a);
    err = static_cast<int>(cudaGetLastError());
  });
  return err;
}

}  // namespace

int allreduce_flags(const FlagsArgs& a, collx_dtype_t dtype, collx_op_t op, void* stream) {
  if (a.ranks < 2 || a.ranks > kFlagsMaxRanks || a.rank < 0 || a.rank >= a.ranks ||
      a.seq == 0 || a.count == 0 || a.slot_bytes % 256 != 0 || a.host == nullptr) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  int err = static_cast<int>(cudaErrorInvalidValue);
  with_dtype(dtype, [&](auto tag) {
    err = launch<decltype(tag)>(a, op, static_cast<cudaStream_t>(stream));
  });
  return err;
}

}  // namespace collx::cuda
