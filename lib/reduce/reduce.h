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
// avg: divides a finished sum by the number of ranks (AllreduceArgs::divisor: each element once,
// by the rank that finishes it).
using FinalizeFn = void (*)(void* buf, size_t n, int ranks);

struct Reducer {
  ReduceFn reduce = nullptr;
  FinalizeFn finalize = nullptr;  // null unless the op needs a final pass
  size_t elem_size = 0;
  uint32_t kind = 0;  // (dtype << 8) | op: what ranks compare to find calls that differ

  void operator()(void* dst, const void* a, const void* b, size_t n) const { reduce(dst, a, b, n); }
};

// The vector instructions the kernels use: AVX2 with F16C and FMA, 32 bytes at a time, or
// AVX-512 F, BW, DQ and VL, 64 (the scalar level's loops are vectorised by the compiler with
// the baseline x86-64's SSE2, 16). Every level gives bitwise the same results, but for the
// payload of a NaN made from two NaNs (which operand's survives is up to the compiler's order,
// in the scalar code too).
enum class Simd { kScalar, kAvx2, kAvx512 };
Simd best_simd();  // the widest this CPU has
const char* simd_name(Simd simd);
// Whether the AVX-512 level's bfloat16 kernels round with AVX-512 BF16's vcvtne2ps2bf16 (where
// the CPU has it; the same bits as without).
bool has_avx512_bf16();
bool cpu_has_f16c();  // the CPU converts float16 (F16C; the AVX2 level needs it too)

// avg at the vector levels, every float type: the quotient of the sum by the rank count without
// a division (reciprocal and one FMA correction), up to this many ranks; vector.cc has the proof
// that it is the division's up to 2^17 ranks for float16 and bfloat16 (which divide as floats),
// below 2^21 for float and 2^50 for double. test_reduce.cc checks every 16-bit value at every
// rank count to 1,025 and float and double at chosen ones. Above it, and at the scalar level,
// it divides.
inline constexpr int kReciprocalMaxRanks = 1 << 17;

// COLLX_ERR_INVALID_ARG for values out of range, COLLX_ERR_UNSUPPORTED for pairs with no
// meaning (avg of integers, bitwise ops on floating types). `simd` above best_simd() is not
// allowed (tests and benchmarks pass lower levels to compare them).
Status make_reducer(collx_dtype_t dtype, collx_op_t op, Reducer* out, Simd simd = best_simd());

}  // namespace collx
