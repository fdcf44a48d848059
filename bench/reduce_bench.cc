// Reduction kernel throughput per dtype x op, against a plain memcpy of the same buffers.
// Bytes counted are all the bytes moved: y op= x reads y and x and writes y (3n); memcpy reads
// and writes (2n). "y op= x" for float32 sum should reach memcpy's bandwidth (both are
// memory-bound beyond the caches). copy/memcpy and copy/copy_cached: 2n bytes per copy with the
// destination `distance` bytes past the source modulo a page (copy_cached's reason to exist);
// copy/process_vm_readv and copy/peer_read the same for the kernel's copy between processes
// (this process reading itself), raw and through peer_read's bounce buffer. Every kernel also
// at each narrower vector level the CPU has ("bfloat16/sum@avx2", "float32/max@scalar"): the
// kernels a CPU without the widest would run, for comparison.
//   reduce_bench [--benchmark_filter=float32]
#include <benchmark/benchmark.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/pattern.h"
#include "memory/host_copy.h"
#include "reduce/reduce.h"
#include "transport/peer_memory.h"

namespace {

struct Buffers {
  explicit Buffers(size_t bytes)
      : x(static_cast<uint8_t*>(std::aligned_alloc(4096, bytes))),
        y(static_cast<uint8_t*>(std::aligned_alloc(4096, bytes))) {
    std::memset(x, 1, bytes);
    std::memset(y, 0, bytes);
  }
  ~Buffers() {
    std::free(x);
    std::free(y);
  }
  uint8_t* x;
  uint8_t* y;
};

void bm_memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  Buffers b(bytes);
  for (auto _ : state) {
    std::memcpy(b.y, b.x, bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
}

// range(0) bytes, range(1) the distance: y starts that far past a page boundary, x at one.
void bm_copy(benchmark::State& state, void (*copy)(void*, const void*, size_t)) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const auto distance = static_cast<size_t>(state.range(1));
  Buffers b(bytes + distance);
  for (auto _ : state) {
    copy(b.y + distance, b.x, bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * bytes);
}

void libc_memcpy(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }

void kernel_copy(void* dst, const void* src, size_t n) {
  iovec here{dst, n}, there{const_cast<void*>(src), n};
  if (process_vm_readv(getpid(), &here, 1, &there, 1, 0) != static_cast<ssize_t>(n)) std::abort();
}

void peer_read_self(void* dst, const void* src, size_t n) {
  if (!collx::peer_read(getpid(), reinterpret_cast<uint64_t>(src), dst, n).ok()) std::abort();
}

void bm_reduce(benchmark::State& state, collx_dtype_t dtype, collx_op_t op, collx::Simd simd) {
  collx::Reducer red;
  if (!collx::make_reducer(dtype, op, &red, simd).ok()) {
    state.SkipWithError("unsupported");
    return;
  }
  const auto bytes = static_cast<size_t>(state.range(0));
  const size_t n = bytes / red.elem_size;
  Buffers b(bytes);
  collx::test::fill_input(dtype, op, 1, n, b.x);
  collx::test::fill_input(dtype, op, 2, n, b.y);
  for (auto _ : state) {
    red(b.y, b.y, b.x, n);  // y op= x
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * bytes);
}

const int64_t kSizes[] = {256 << 10, 64 << 20};

int register_all() {
  for (int64_t s : kSizes) benchmark::RegisterBenchmark("memcpy", bm_memcpy)->Arg(s);
  for (int64_t s : {16 << 10, 256 << 10}) {
    for (int64_t d : {0, 16, 2048}) {
      benchmark::RegisterBenchmark("copy/memcpy", bm_copy, libc_memcpy)->Args({s, d});
      benchmark::RegisterBenchmark("copy/copy_cached", bm_copy, collx::copy_cached)->Args({s, d});
      benchmark::RegisterBenchmark("copy/process_vm_readv", bm_copy, kernel_copy)->Args({s, d});
      benchmark::RegisterBenchmark("copy/peer_read", bm_copy, peer_read_self)->Args({s, d});
    }
  }
  for (collx_dtype_t d : collx::test::all_dtypes()) {
    for (collx_op_t op : collx::test::all_ops()) {
      if (!collx::test::op_valid(d, op) || op == COLLX_AVG) continue;
      const std::string name = std::string(collx_dtype_name(d)) + "/" + collx_op_name(op);
      const auto best = collx::best_simd();
      for (int64_t s : kSizes) {
        benchmark::RegisterBenchmark(name.c_str(), bm_reduce, d, op, best)->Arg(s);
      }
      for (int level = static_cast<int>(best) - 1; level >= 0; --level) {
        const auto simd = static_cast<collx::Simd>(level);
        const std::string lower = name + "@" + collx::simd_name(simd);
        for (int64_t s : kSizes) {
          benchmark::RegisterBenchmark(lower.c_str(), bm_reduce, d, op, simd)->Arg(s);
        }
      }
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
