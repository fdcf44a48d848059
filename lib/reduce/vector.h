// The x86 vector kernels (vector.cc), AVX2 (+F16C +FMA) or AVX-512 (F, BW, DQ, VL): float16
// and bfloat16 reductions written with intrinsics (the compiler does not vectorise them), the
// other types' scalar loop compiled for the level, and avg's quotient for every float type.
// Each gives bitwise the scalar kernels' results. Null where there is none: the scalar level,
// an op without meaning for the type, a build for another architecture.
#pragma once

#include "collx/collx.h"
#include "reduce/reduce.h"

namespace collx {

template <typename T>  // every dtype's type (reduce/dtype.h)
ReduceFn vector_kernel(collx_op_t op, Simd simd);
template <typename F>  // Float16, BFloat16, float, double
FinalizeFn vector_divide(Simd simd);

}  // namespace collx
