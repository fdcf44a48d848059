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
  uint32_t kind = 0;  // (dtype << 8) | op: what ranks compare to find calls that differ

  void operator()(void* dst, const void* a, const void* b, size_t n) const { reduce(dst, a, b, n); }
};

// COLLX_ERR_INVALID_ARG for values out of range, COLLX_ERR_UNSUPPORTED for pairs with no
// meaning (avg of integers, bitwise ops on floating types).
Status make_reducer(collx_dtype_t dtype, collx_op_t op, Reducer* out);

}  // namespace collx
