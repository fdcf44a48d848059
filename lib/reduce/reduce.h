// CPU reduction kernels for every supported dtype x op.
//
// A kernel computes dst[i] = a[i] op b[i]. dst may be the same pointer as a or b (never a
// partial overlap). Algorithms always pass the operand of the lower-ranked group as `a`, so
// every rank evaluates the same expression and results are bitwise identical, NaN payloads and
// signed zeros included.
#pragma once

#include <cstddef>

#include "api/status.h"

namespace collx {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t n);
// avg: divides the final sum by the number of ranks (the same operation on every rank).
using FinalizeFn = void (*)(void* buf, size_t n, int ranks);

struct Reducer {
  ReduceFn reduce = nullptr;
  FinalizeFn finalize = nullptr;  // null unless the op needs a final pass
  size_t elem_size = 0;

  void operator()(void* dst, const void* a, const void* b, size_t n) const { reduce(dst, a, b, n); }
};

// memcpy with non-temporal stores where the CPU has them (x86-64; memcpy elsewhere), for data
// that another core reads next: that core then reads it from memory instead of probing this
// core's cache line by line, which is much slower (docs/PERFORMANCE.md: shm_two_shot 1.7x
// faster at 1-16 MiB). Ends with a store fence, so a release store after it publishes the
// data. No overlap allowed.
void copy_streaming(void* dst, const void* src, size_t n);

// memcpy, except where the destination lies 1 to 63 bytes past the source modulo 4096 (on x86-64):
// there glibc 2.36 copies with `rep movsb`, which AMD Zen CPUs run at about 3 GB/s instead of
// 40 - 80 GB/s (docs/PERFORMANCE.md, "Copies at an unlucky page offset"), so an SSE2 loop
// copies instead. User buffers lie at any offset from the shared segment, so every copy
// between them goes through here. No overlap allowed.
void copy_cached(void* dst, const void* src, size_t n);

// COLLX_ERR_INVALID_ARG for values out of range, COLLX_ERR_UNSUPPORTED for pairs with no
// meaning (avg of integers, bitwise ops on floating types).
Status make_reducer(collx_dtype_t dtype, collx_op_t op, Reducer* out);

}  // namespace collx
