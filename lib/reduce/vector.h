// The x86 vector kernels (vector.cc), AVX2 (+F16C +FMA) or AVX-512 (F + BW): float16 and
// bfloat16 reductions, which the compiler does not vectorise, and avg's quotient for every
// float type. Each does whole vectors and leaves the rest to the narrower level, then to the
// scalar kernels, with bitwise the scalar kernels' results. Null where there is none: the
// scalar level, an op without a vector kernel, a build for another architecture.
#pragma once

#include "collx/collx.h"
#include "reduce/reduce.h"

namespace collx {

template <typename H>  // Float16, BFloat16
ReduceFn vector_kernel(collx_op_t op, Simd simd);
template <typename F>  // Float16, BFloat16, float, double
FinalizeFn vector_divide(Simd simd);

}  // namespace collx
