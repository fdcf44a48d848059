#include "reduce/reduce.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <type_traits>

#include "reduce/dtype.h"
#include "reduce/ops.h"
#include "reduce/scalar.h"
#include "reduce/vector.h"

namespace collx {
namespace {

template <typename T>
ReduceFn pick(collx_op_t op, Simd simd) {
  if (ReduceFn fn = vector_kernel<T>(op, simd)) return fn;
  ReduceFn fn = nullptr;  // stays null where op has no meaning for T
  with_op<T>(op, [&](auto o) { fn = scalar::kernel<T, decltype(o)>; });
  return fn;
}

template <typename T>
Reducer make(collx_op_t op, Simd simd) {
  Reducer r;
  r.reduce = pick<T>(op, simd);
  r.elem_size = sizeof(T);
  if (op == COLLX_AVG) {
    if constexpr (!std::is_integral_v<T>) {
      r.finalize = vector_divide<T>(simd);
      if (r.finalize == nullptr) r.finalize = scalar::divide<T>;
    }
  }
  return r;
}

}  // namespace

// CPUID bits that clang 14's __builtin_cpu_supports does not name (F16C: leaf 1, ECX bit 29;
// AVX512_BF16: leaf 7 subleaf 1, EAX bit 5). The OS's support of the vector state comes with
// the AVX2 and AVX-512 checks beside them.
bool cpu_has_f16c() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
#else
  return false;
#endif
}

#if defined(__x86_64__)
namespace {
bool cpu_has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
}
}  // namespace
#endif

Simd best_simd() {
#if defined(__x86_64__)
  static const Simd best = __builtin_cpu_supports("avx512f") &&
                                   __builtin_cpu_supports("avx512bw") &&
                                   __builtin_cpu_supports("avx512dq") &&
                                   __builtin_cpu_supports("avx512vl")
                               ? Simd::kAvx512
                           : __builtin_cpu_supports("avx2") && cpu_has_f16c() &&
                                     __builtin_cpu_supports("fma")
                               ? Simd::kAvx2
                               : Simd::kScalar;
  return best;
#else
  return Simd::kScalar;
#endif
}

bool has_avx512_bf16() {
#if defined(__x86_64__)
  static const bool has = best_simd() == Simd::kAvx512 && cpu_has_avx512_bf16();
  return has;
#else
  return false;
#endif
}

const char* simd_name(Simd simd) {
  switch (simd) {
    case Simd::kAvx512: return "avx512";
    case Simd::kAvx2: return "avx2";
    default: return "scalar";
  }
}

Status make_reducer(collx_dtype_t dtype, collx_op_t op, Reducer* out, Simd simd) {
  if (static_cast<unsigned>(op) >= COLLX_OP_COUNT) {
    return error(COLLX_ERR_INVALID_ARG, "invalid op %d", static_cast<int>(op));
  }
  if (static_cast<int>(simd) > static_cast<int>(best_simd())) {
    return error(COLLX_ERR_UNSUPPORTED, "this CPU has no %s", simd_name(simd));
  }
  Reducer r;
  if (!with_dtype(dtype, [&](auto tag) { r = make<decltype(tag)>(op, simd); })) {
    return error(COLLX_ERR_INVALID_ARG, "invalid dtype %d", static_cast<int>(dtype));
  }
  if (r.reduce == nullptr) {
    return error(COLLX_ERR_UNSUPPORTED, "op %s is not defined for dtype %s", collx_op_name(op),
                 collx_dtype_name(dtype));
  }
  r.kind = (static_cast<uint32_t>(dtype) << 8) | static_cast<uint32_t>(op);
  *out = r;
  return Status();
}

}  // namespace collx
