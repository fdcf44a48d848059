#include "reduce/reduce.h"

#include <cstdint>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "reduce/dtype.h"
#include "reduce/half.h"
#include "reduce/ops.h"

namespace collx {
namespace {

// Element i of an array of T at p. Callers' buffers may lie at any byte offset (a double in a
// packed record, a float after a header byte), so elements are accessed as the member of a
// packed struct (alignment 1): the same unaligned loads and stores a T* gives, without the
// undefined behaviour of a misaligned T*.
template <typename T>
struct __attribute__((packed)) Unaligned {
  T v;
};
template <typename T>
inline T load(const void* p, size_t i) {
  return static_cast<const Unaligned<T>*>(p)[i].v;
}
template <typename T>
inline void store(void* p, size_t i, T v) {
  static_cast<Unaligned<T>*>(p)[i].v = v;
}

// ivdep: dst may equal a or b, which is safe element by element; without it GCC would add an
// overlap check that fails for in-place use and falls back to scalar code.
template <typename T, typename Op>
void kernel(void* dst, const void* a, const void* b, size_t n) {
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) store(dst, i, combine<Op>(load<T>(a, i), load<T>(b, i)));
}

#if defined(__x86_64__)
// float16/bfloat16 with AVX2 (+F16C: every x86-64-v3 CPU): 8 lanes at a time, the same IEEE
// float operations as the scalar kernel, rounded back RNE: bitwise the same results.
struct VecSum {
  __attribute__((target("avx2,f16c"))) static __m256 apply(__m256 a, __m256 b) {
    return _mm256_add_ps(a, b);
  }
};
struct VecProd {
  __attribute__((target("avx2,f16c"))) static __m256 apply(__m256 a, __m256 b) {
    return _mm256_mul_ps(a, b);
  }
};
template <int kCmp>  // _CMP_LT_OQ: min, _CMP_GT_OQ: max; NaN in b wins, as in Min/Max above
struct VecPick {
  __attribute__((target("avx2,f16c"))) static __m256 apply(__m256 a, __m256 b) {
    const __m256 r = _mm256_blendv_ps(a, b, _mm256_cmp_ps(b, a, kCmp));
    return _mm256_blendv_ps(r, b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
  }
};

// 8 narrow values <-> 8 floats, at any byte offset. float16 through F16C; bfloat16 is the top
// half of a float, rounded to nearest-even with integer arithmetic, NaNs quieted (as in half.h).
template <typename H>
__attribute__((target("avx2,f16c"))) inline __m256 load8(const void* p) {
  const __m128i raw = _mm_loadu_si128(static_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<H, Float16>) return _mm256_cvtph_ps(raw);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}
template <typename H>
__attribute__((target("avx2,f16c"))) inline void store8(void* p, __m256 v) {
  if constexpr (std::is_same_v<H, Float16>) {
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    return;
  }
  const __m256i f = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(f, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(f, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(f, 16), _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(f, _mm256_set1_epi32(0x7fffffff)),
                                            _mm256_set1_epi32(0x7f800000));
  const __m256i w = _mm256_blendv_epi8(rounded, quiet, is_nan);
  // Pack the eight 32-bit lanes (each < 2^16) into 16 bits, in order.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0xd8);
  _mm_storeu_si128(static_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

template <typename H, typename V, typename Op>
__attribute__((target("avx2,f16c"))) void avx2_half_kernel(void* dst, const void* a,
                                                           const void* b, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const size_t at = i * sizeof(H);
    store8<H>(d + at, V::apply(load8<H>(x + at), load8<H>(y + at)));
  }
  const size_t at = i * sizeof(H);
  kernel<H, Op>(d + at, x + at, y + at, n - i);
}

bool have_f16c() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return yes;
}
#endif

template <typename T>
void divide(void* buf, size_t n, int ranks) {
  for (size_t i = 0; i < n; ++i) store(buf, i, divide_by(load<T>(buf, i), ranks));
}

template <typename T>
ReduceFn pick(collx_op_t op) {
#if defined(__x86_64__)
  if constexpr (kHalf<T>) {
    if (have_f16c()) {
      switch (op) {
        case COLLX_SUM: case COLLX_AVG: return avx2_half_kernel<T, VecSum, Sum>;
        case COLLX_PROD: return avx2_half_kernel<T, VecProd, Prod>;
        case COLLX_MIN: return avx2_half_kernel<T, VecPick<_CMP_LT_OQ>, Min>;
        case COLLX_MAX: return avx2_half_kernel<T, VecPick<_CMP_GT_OQ>, Max>;
        default: return nullptr;
      }
    }
  }
#endif
  ReduceFn fn = nullptr;  // stays null where op has no meaning for T
  with_op<T>(op, [&](auto o) { fn = kernel<T, decltype(o)>; });
  return fn;
}

template <typename T>
Reducer make(collx_op_t op) {
  Reducer r;
  r.reduce = pick<T>(op);
  r.elem_size = sizeof(T);
  if (op == COLLX_AVG) {
    if constexpr (!std::is_integral_v<T>) r.finalize = divide<T>;
  }
  return r;
}

}  // namespace

Status make_reducer(collx_dtype_t dtype, collx_op_t op, Reducer* out) {
  if (static_cast<unsigned>(op) >= COLLX_OP_COUNT) {
    return error(COLLX_ERR_INVALID_ARG, "invalid op %d", static_cast<int>(op));
  }
  Reducer r;
  if (!with_dtype(dtype, [&](auto tag) { r = make<decltype(tag)>(op); })) {
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
