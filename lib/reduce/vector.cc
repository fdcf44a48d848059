#include "reduce/vector.h"

#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from a deliberately undefined vector, which its
// -Wmaybe-uninitialized reports where they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#elif defined(__x86_64__)
#include <immintrin.h>
#endif

#include "reduce/half.h"
#include "reduce/ops.h"
#include "reduce/scalar.h"

namespace collx {

#if defined(__x86_64__)
namespace {

// float16/bfloat16 with AVX2 (+F16C +FMA: every x86-64-v3 CPU) or AVX-512 (F, BW, DQ, VL), a
// vector at a time: the same IEEE float operations as the scalar kernel, rounded back RNE, so
// bitwise the same results. bfloat16 at the AVX-512 level rounds with AVX-512 BF16's
// vcvtne2ps2bf16 where the CPU has it (Cooper Lake, Sapphire Rapids, Zen 4 and later). The
// other types: the scalar kernel's loop compiled for the level (wide_kernel).
#define COLLX_AVX2 __attribute__((target("avx2,f16c,fma")))
#define COLLX_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define COLLX_AVX512_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

// The operations on 8 or 16 floats. Min and max: NaN in b wins, then NaN in a, as in ops.h.
// The sum is a * 1 + b, in one rounding the same bits as a + b. On the Zen 5 EPYC it made the
// float16 sum as fast as prod in cache (20 - 25% faster than with adds, at both levels:
// PERFORMANCE.md, "bfloat16 rounded by AVX-512 BF16"), presumably as the adds had shared their
// pipes with the conversions.
struct VecSum {
  COLLX_AVX2 static __m256 apply(__m256 a, __m256 b) {
    return _mm256_fmadd_ps(a, _mm256_set1_ps(1.0f), b);
  }
  COLLX_AVX512 static __m512 apply(__m512 a, __m512 b) {
    return _mm512_fmadd_ps(a, _mm512_set1_ps(1.0f), b);
  }
};
struct VecProd {
  COLLX_AVX2 static __m256 apply(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
  COLLX_AVX512 static __m512 apply(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
};
// vminps/vmaxps (b, a) give b < a ? b : a (b > a ? b : a), so a where either is NaN or both
// are zeros, as ops.h; then a NaN in b is taken.
struct VecMin {
  COLLX_AVX2 static __m256 apply(__m256 a, __m256 b) {
    return _mm256_blendv_ps(_mm256_min_ps(b, a), b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
  }
  COLLX_AVX512 static __m512 apply(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_min_ps(b, a), _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), b);
  }
};
struct VecMax {
  COLLX_AVX2 static __m256 apply(__m256 a, __m256 b) {
    return _mm256_blendv_ps(_mm256_max_ps(b, a), b, _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
  }
  COLLX_AVX512 static __m512 apply(__m512 a, __m512 b) {
    return _mm512_mask_mov_ps(_mm512_max_ps(b, a), _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), b);
  }
};

// One vector's worth of float16 (8 or 16 values: the hardware's conversions) or bfloat16 (16
// or 32). The width's tag (Avx2, Avx512) picks the overload.
struct Avx2 {};
struct Avx512 {};
struct Avx512Bf16 {};  // bfloat16 only

COLLX_AVX2 inline __m256 f16_load(const uint8_t* p, Avx2) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
COLLX_AVX512 inline __m512 f16_load(const uint8_t* p, Avx512) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
template <typename V>
COLLX_AVX2 inline void block(Float16, uint8_t* d, const uint8_t* x, const uint8_t* y, const V& v,
                             Avx2 w) {
  const __m256 r = v.apply(f16_load(x, w), f16_load(y, w));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
}
template <typename V>
COLLX_AVX512 inline void block(Float16, uint8_t* d, const uint8_t* x, const uint8_t* y,
                               const V& v, Avx512 w) {
  const __m512 r = v.apply(f16_load(x, w), f16_load(y, w));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d),
                      _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
}

// bfloat16, two to a 32-bit lane, with no shuffle across lanes: the even element (the low half)
// shifted up is a float, and so is the odd one (the high half) with the low half cleared. Each
// is combined as a float and rounded in place, RNE with integers (add 0x7fff plus the lowest
// kept bit; a NaN is quieted by setting the top fraction bit instead, as in half.h), and the
// two results' high halves are put back together.
COLLX_AVX2 inline __m256 bf16_even(__m256i v) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
COLLX_AVX2 inline __m256 bf16_odd(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(~0xffff)));
}
COLLX_AVX2 inline __m256i bf16_round(__m256 v) {
  const __m256i f = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(f, 16), _mm256_set1_epi32(1));
  const __m256i t = _mm256_add_epi32(_mm256_add_epi32(f, _mm256_set1_epi32(0x7fff)), lsb);
  const __m256i quiet = _mm256_or_si256(f, _mm256_set1_epi32(0x400000));
  return _mm256_blendv_epi8(t, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}
template <typename V>
COLLX_AVX2 inline void block(BFloat16, uint8_t* d, const uint8_t* x, const uint8_t* y, const V& v,
                             Avx2) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y));
  const __m256i e = _mm256_srli_epi32(bf16_round(v.apply(bf16_even(a), bf16_even(b))), 16);
  const __m256i o = bf16_round(v.apply(bf16_odd(a), bf16_odd(b)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_blend_epi16(e, o, 0xaa));
}
COLLX_AVX512 inline __m512 bf16_even(__m512i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
COLLX_AVX512 inline __m512 bf16_odd(__m512i v) {
  return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(~0xffff)));
}
COLLX_AVX512 inline __m512i bf16_round(__m512 v) {
  const __m512i f = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(f, 16), _mm512_set1_epi32(1));
  const __m512i t = _mm512_add_epi32(_mm512_add_epi32(f, _mm512_set1_epi32(0x7fff)), lsb);
  return _mm512_mask_or_epi32(t, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), f,
                              _mm512_set1_epi32(0x400000));
}
COLLX_AVX512 inline void bf16_store(uint8_t* d, __m512 even, __m512 odd) {
  const __m512i e = _mm512_srli_epi32(bf16_round(even), 16);
  _mm512_storeu_si512(d, _mm512_mask_blend_epi16(0xaaaaaaaa, e, bf16_round(odd)));
}
template <typename V>
COLLX_AVX512 inline void block(BFloat16, uint8_t* d, const uint8_t* x, const uint8_t* y,
                               const V& v, Avx512) {
  const __m512i a = _mm512_loadu_si512(x), b = _mm512_loadu_si512(y);
  bf16_store(d, v.apply(bf16_even(a), bf16_even(b)), v.apply(bf16_odd(a), bf16_odd(b)));
}
// The same even and odd floats, both rounded by one vcvtne2ps2bf16 (RNE; a NaN quieted by
// setting the top fraction bit, as in half.h) into 16 even then 16 odd elements, which one
// vpermw puts back in order. The instruction takes a subnormal float as zero (whatever MXCSR
// says), so a block with a subnormal result (bfloat16 has float's exponent range: nothing else
// rounds to one) is rounded with integers as above.
template <typename V>
COLLX_AVX512_BF16 inline void block(BFloat16, uint8_t* d, const uint8_t* x, const uint8_t* y,
                                    const V& v, Avx512Bf16) {
  const __m512i a = _mm512_loadu_si512(x), b = _mm512_loadu_si512(y);
  const __m512 e = v.apply(bf16_even(a), bf16_even(b));
  const __m512 o = v.apply(bf16_odd(a), bf16_odd(b));
  constexpr int kSubnormal = 0x20;  // vfpclassps's class bits: denormal
  if ((_mm512_fpclass_ps_mask(e, kSubnormal) | _mm512_fpclass_ps_mask(o, kSubnormal)) != 0) {
    bf16_store(d, e, o);
    return;
  }
  const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(o, e));
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
                                         1, 16, 0);
  _mm512_storeu_si512(d, _mm512_permutexvar_epi16(order, halves));
}

// float and double as they are (only avg's division uses these).
template <typename V>
COLLX_AVX2 inline void block(float, uint8_t* d, const uint8_t* x, const uint8_t* y, const V& v,
                             Avx2) {
  const auto* a = reinterpret_cast<const float*>(x);
  const auto* b = reinterpret_cast<const float*>(y);
  _mm256_storeu_ps(reinterpret_cast<float*>(d), v.apply(_mm256_loadu_ps(a), _mm256_loadu_ps(b)));
}
template <typename V>
COLLX_AVX512 inline void block(float, uint8_t* d, const uint8_t* x, const uint8_t* y, const V& v,
                               Avx512) {
  _mm512_storeu_ps(d, v.apply(_mm512_loadu_ps(x), _mm512_loadu_ps(y)));
}
template <typename V>
COLLX_AVX2 inline void block(double, uint8_t* d, const uint8_t* x, const uint8_t* y, const V& v,
                             Avx2) {
  const auto* a = reinterpret_cast<const double*>(x);
  const auto* b = reinterpret_cast<const double*>(y);
  _mm256_storeu_pd(reinterpret_cast<double*>(d), v.apply(_mm256_loadu_pd(a), _mm256_loadu_pd(b)));
}
template <typename V>
COLLX_AVX512 inline void block(double, uint8_t* d, const uint8_t* x, const uint8_t* y,
                               const V& v, Avx512) {
  _mm512_storeu_pd(d, v.apply(_mm512_loadu_pd(x), _mm512_loadu_pd(y)));
}

// Elements of H in a block of `lanes` floats: float16 converts one to a lane, bfloat16 packs
// two, a double takes two lanes.
template <typename H>
constexpr size_t block_elems(size_t lanes) {
  if constexpr (std::is_same_v<H, BFloat16>) return 2 * lanes;
  else if constexpr (std::is_same_v<H, double>) return lanes / 2;
  else return lanes;
}

// d = x op y for as many whole blocks as fit in n elements; returns how many elements that
// is. Written once per width: each loop must carry its target for the blocks to inline into it.
template <typename H, typename V>
COLLX_AVX2 size_t blocks(uint8_t* d, const uint8_t* x, const uint8_t* y, size_t n, const V& v,
                         Avx2 w) {
  constexpr size_t kBlock = block_elems<H>(8);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const size_t at = i * sizeof(H);
    block(H{}, d + at, x + at, y + at, v, w);
  }
  return i;
}
template <typename H, typename V>
COLLX_AVX512 size_t blocks(uint8_t* d, const uint8_t* x, const uint8_t* y, size_t n,
                           const V& v, Avx512 w) {
  constexpr size_t kBlock = block_elems<H>(16);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const size_t at = i * sizeof(H);
    block(H{}, d + at, x + at, y + at, v, w);
  }
  return i;
}
template <typename H, typename V>
COLLX_AVX512_BF16 size_t blocks(uint8_t* d, const uint8_t* x, const uint8_t* y, size_t n,
                                const V& v, Avx512Bf16 w) {
  constexpr size_t kBlock = block_elems<H>(16);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const size_t at = i * sizeof(H);
    block(H{}, d + at, x + at, y + at, v, w);
  }
  return i;
}

// The kernels and avg's division: whole blocks, then the rest (under one block) through the
// narrower code, AVX2's, then the scalar one.
template <typename H, typename V, typename Op>
COLLX_AVX2 void avx2_half_kernel(void* dst, const void* a, const void* b, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  const size_t i = blocks<H>(d, x, y, n, V{}, Avx2{});
  const size_t at = i * sizeof(H);
  scalar::kernel<H, Op>(d + at, x + at, y + at, n - i);
}
template <typename H, typename V, typename Op>
COLLX_AVX512 void avx512_half_kernel(void* dst, const void* a, const void* b, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  const size_t i = blocks<H>(d, x, y, n, V{}, Avx512{});
  const size_t at = i * sizeof(H);
  avx2_half_kernel<H, V, Op>(d + at, x + at, y + at, n - i);
}
template <typename V, typename Op>
COLLX_AVX512_BF16 void avx512_bf16_kernel(void* dst, const void* a, const void* b, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  const size_t i = blocks<BFloat16>(d, x, y, n, V{}, Avx512Bf16{});
  const size_t at = i * sizeof(BFloat16);
  avx2_half_kernel<BFloat16, V, Op>(d + at, x + at, y + at, n - i);
}

// avg's quotient s / p of a float (float16 and bfloat16 as floats) by the rank count, the
// second operand unused (the blocks read it; it is s again). F is the lanes' type.
template <typename F>
struct VecDivide {
  F p;
  COLLX_AVX2 __m256 apply(__m256 s, __m256) const { return _mm256_div_ps(s, _mm256_set1_ps(p)); }
  COLLX_AVX512 __m512 apply(__m512 s, __m512) const {
    return _mm512_div_ps(s, _mm512_set1_ps(p));
  }
  COLLX_AVX2 __m256d apply(__m256d s, __m256d) const {
    return _mm256_div_pd(s, _mm256_set1_pd(p));
  }
  COLLX_AVX512 __m512d apply(__m512d s, __m512d) const {
    return _mm512_div_pd(s, _mm512_set1_pd(p));
  }
};

// The same quotient without a division, up to kReciprocalMaxRanks: q = RN(s c) with c =
// RN(1 / p), the remainder r = s - q p exact in an FMA, then RN(q + r c) in another
// (Markstein's correction). Why it is RN(s / p), in precision P (u = 2^-P), x = s / p, ulp(x)
// the spacing of the floats around x, p < 2^(P-3), no overflow (|x| <= |s|):
// 1. c = (1 + e) / p with |e| < u, so |s c - x| < u |x| < ulp(x), and q is within half an ulp
//    of s c (at most twice ulp(x) there): |q - x| < 2 ulp(x).
// 2. s and q p are multiples of ulp(x) / 2 (q lies at most one binade below x), so s - q p =
//    p (x - q) is such a multiple below 4p < 2^P of them: a float, r exactly.
// 3. q + r c = x + (x - q) e: the FMA rounds x + d with |d| < 2 u ulp(x) (none of it rounded
//    before). RN(x + d) = RN(x) unless a breakpoint (a midpoint of two floats) lies within
//    |d| of x or is x. Breakpoints near x are multiples m of ulp(x) / 4, and s - p m is one
//    too, so a breakpoint m != x lies at least ulp(x) / (4p) > 2 u ulp(x) away (p < 2^(P-3)).
// 4. x is never a breakpoint where it is normal: a breakpoint is an odd integer of P + 1 bits
//    times a power of two, and s = p m would then have P + 1 significant bits. Among the
//    subnormals it can be (s = 3 * 2^-149, p = 6 gives 2^-150 in float): there the sum
//    rounds toward zero, not to even.
// r = 0 (q exact; s may be -0) or NaN (s infinite or NaN): q stays, as the division gives.
// So a vector with a sum 0 < |s| < `small` = p 2^(emin + P + 1) divides instead (kGuard): its
// quotient may be such a subnormal tie, and q, r or the result may be subnormal, which the
// multiply and the FMAs take a microcode assist for, on Intel over a hundred cycles (the
// division takes none). Above it, all of them are normal. Not for float16 and bfloat16, whose
// sums are multiples of 2^-24 and 2^-133: s / p is then an odd multiple of 2^-150 (a float's
// subnormal tie) only if 2^17 divides p, and p <= 2^17 = kReciprocalMaxRanks is then a power
// of two, whose reciprocal is exact. (bfloat16 sums below 2^-100 or so take the assists: the
// guard would cost a quarter of the pass's time on other values.)
template <typename F, bool kGuard>
struct VecQuotient {
  using L = std::numeric_limits<F>;
  F p, c, small;  // c = 1 / p, rounded
  explicit VecQuotient(F ranks)
      : p(ranks), c(1 / ranks), small(L::min() * F(uint64_t(1) << (L::digits + 1)) * ranks) {}
  COLLX_AVX2 __m256 apply(__m256 s, __m256) const {
    const __m256 vp = _mm256_set1_ps(p), vc = _mm256_set1_ps(c);
    const __m256 zero = _mm256_setzero_ps();
    if constexpr (kGuard) {
      const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), s);
      const __m256 tiny = _mm256_and_ps(_mm256_cmp_ps(a, zero, _CMP_GT_OQ),
                                        _mm256_cmp_ps(a, _mm256_set1_ps(small), _CMP_LT_OQ));
      if (!_mm256_testz_ps(tiny, tiny)) return _mm256_div_ps(s, vp);
    }
    const __m256 q = _mm256_mul_ps(s, vc);
    const __m256 r = _mm256_fnmadd_ps(q, vp, s);
    // r < 0 or r > 0, false for NaN: one _CMP_NEQ_OQ would do, but valgrind 3.19 takes it
    // as true for NaN (infinities then came out NaN there)
    const __m256 fix = _mm256_or_ps(_mm256_cmp_ps(r, zero, _CMP_LT_OQ),
                                    _mm256_cmp_ps(r, zero, _CMP_GT_OQ));
    return _mm256_blendv_ps(q, _mm256_fmadd_ps(r, vc, q), fix);
  }
  COLLX_AVX512 __m512 apply(__m512 s, __m512) const {
    const __m512 vp = _mm512_set1_ps(p), vc = _mm512_set1_ps(c);
    const __m512 zero = _mm512_setzero_ps();
    if constexpr (kGuard) {
      const __m512 a = _mm512_abs_ps(s);
      const __mmask16 nonzero = _mm512_cmp_ps_mask(a, zero, _CMP_GT_OQ);
      if (_mm512_mask_cmp_ps_mask(nonzero, a, _mm512_set1_ps(small), _CMP_LT_OQ) != 0) {
        return _mm512_div_ps(s, vp);
      }
    }
    const __m512 q = _mm512_mul_ps(s, vc);
    const __m512 r = _mm512_fnmadd_ps(q, vp, s);
    const __mmask16 fix = _mm512_cmp_ps_mask(r, zero, _CMP_NEQ_OQ);
    return _mm512_mask3_fmadd_ps(r, vc, q, fix);
  }
  COLLX_AVX2 __m256d apply(__m256d s, __m256d) const {
    const __m256d vp = _mm256_set1_pd(p), vc = _mm256_set1_pd(c);
    const __m256d zero = _mm256_setzero_pd();
    static_assert(kGuard);  // doubles are never 16-bit values
    const __m256d a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), s);
    const __m256d tiny = _mm256_and_pd(_mm256_cmp_pd(a, zero, _CMP_GT_OQ),
                                       _mm256_cmp_pd(a, _mm256_set1_pd(small), _CMP_LT_OQ));
    if (!_mm256_testz_pd(tiny, tiny)) return _mm256_div_pd(s, vp);
    const __m256d q = _mm256_mul_pd(s, vc);
    const __m256d r = _mm256_fnmadd_pd(q, vp, s);
    const __m256d fix = _mm256_or_pd(_mm256_cmp_pd(r, zero, _CMP_LT_OQ),  // (as for floats)
                                     _mm256_cmp_pd(r, zero, _CMP_GT_OQ));
    return _mm256_blendv_pd(q, _mm256_fmadd_pd(r, vc, q), fix);
  }
  COLLX_AVX512 __m512d apply(__m512d s, __m512d) const {
    const __m512d vp = _mm512_set1_pd(p), vc = _mm512_set1_pd(c);
    const __m512d zero = _mm512_setzero_pd();
    static_assert(kGuard);  // doubles are never 16-bit values
    const __m512d a = _mm512_abs_pd(s);
    const __mmask8 nonzero = _mm512_cmp_pd_mask(a, zero, _CMP_GT_OQ);
    if (_mm512_mask_cmp_pd_mask(nonzero, a, _mm512_set1_pd(small), _CMP_LT_OQ) != 0) {
      return _mm512_div_pd(s, vp);
    }
    const __m512d q = _mm512_mul_pd(s, vc);
    const __m512d r = _mm512_fnmadd_pd(q, vp, s);
    const __mmask8 fix = _mm512_cmp_pd_mask(r, zero, _CMP_NEQ_OQ);
    return _mm512_mask3_fmadd_pd(r, vc, q, fix);
  }
};
template <typename H, typename W>
size_t divide_blocks(uint8_t* d, size_t n, int ranks, W w) {
  using F = std::conditional_t<std::is_same_v<H, double>, double, float>;
  const auto p = static_cast<F>(ranks);
  using Quotient = VecQuotient<F, !kHalf<H>>;
  return ranks <= kReciprocalMaxRanks ? blocks<H>(d, d, d, n, Quotient{p}, w)
                                      : blocks<H>(d, d, d, n, VecDivide<F>{p}, w);
}
template <typename H>
COLLX_AVX2 void avx2_divide(void* buf, size_t n, int ranks) {
  auto* d = static_cast<uint8_t*>(buf);
  const size_t i = divide_blocks<H>(d, n, ranks, Avx2{});
  scalar::divide<H>(d + i * sizeof(H), n - i, ranks);
}
template <typename H>
COLLX_AVX512 void avx512_divide(void* buf, size_t n, int ranks) {
  auto* d = static_cast<uint8_t*>(buf);
  const size_t i = divide_blocks<H>(d, n, ranks, Avx512{});
  avx2_divide<H>(d + i * sizeof(H), n - i, ranks);
}
COLLX_AVX512_BF16 void avx512_bf16_divide(void* buf, size_t n, int ranks) {
  auto* d = static_cast<uint8_t*>(buf);
  const size_t i = divide_blocks<BFloat16>(d, n, ranks, Avx512Bf16{});
  avx2_divide<BFloat16>(d + i * sizeof(BFloat16), n - i, ranks);
}

// Every type but float16 and bfloat16: the scalar kernel's loop, which the compiler vectorises
// 32 or 64 bytes at a time with the level's instructions (the baseline build's SSE2 does 16,
// and lacks most integer min and max instructions and the 32- and 64-bit multiplies). Each
// element is the same expression as at the scalar level, so the same bits.
template <typename T, typename Op>
COLLX_AVX2 void avx2_wide_kernel(void* dst, const void* a, const void* b, size_t n) {
  scalar::loop<T, Op>(dst, a, b, n);
}
template <typename T, typename Op>
COLLX_AVX512 void avx512_wide_kernel(void* dst, const void* a, const void* b, size_t n) {
  scalar::loop<T, Op>(dst, a, b, n);
}
template <typename T>
ReduceFn wide_kernel(collx_op_t op, Simd simd) {
  ReduceFn fn = nullptr;
  with_op<T>(op, [&](auto o) {
    using Op = decltype(o);
    fn = simd == Simd::kAvx512 ? avx512_wide_kernel<T, Op> : avx2_wide_kernel<T, Op>;
  });
  return fn;
}

template <typename H, typename V, typename Op, bool kWide>
ReduceFn half_fn() {
  if constexpr (kWide && std::is_same_v<H, BFloat16>) {
    if (has_avx512_bf16()) return avx512_bf16_kernel<V, Op>;
  }
  if constexpr (kWide) return avx512_half_kernel<H, V, Op>;
  else return avx2_half_kernel<H, V, Op>;
}
template <typename H, bool kWide>
ReduceFn half_kernel(collx_op_t op) {
  switch (op) {
    case COLLX_SUM: case COLLX_AVG: return half_fn<H, VecSum, Sum, kWide>();
    case COLLX_PROD: return half_fn<H, VecProd, Prod, kWide>();
    case COLLX_MIN: return half_fn<H, VecMin, Min, kWide>();
    case COLLX_MAX: return half_fn<H, VecMax, Max, kWide>();
    default: return nullptr;
  }
}

}  // namespace

template <typename T>
ReduceFn vector_kernel(collx_op_t op, Simd simd) {
  if (simd == Simd::kScalar) return nullptr;
  if constexpr (kHalf<T>) {
    return simd == Simd::kAvx512 ? half_kernel<T, true>(op) : half_kernel<T, false>(op);
  } else {
    return wide_kernel<T>(op, simd);
  }
}
template <typename F>
FinalizeFn vector_divide(Simd simd) {
  if constexpr (std::is_same_v<F, BFloat16>) {
    if (simd == Simd::kAvx512 && has_avx512_bf16()) return avx512_bf16_divide;
  }
  if (simd == Simd::kAvx512) return avx512_divide<F>;
  if (simd == Simd::kAvx2) return avx2_divide<F>;
  return nullptr;
}
#else
template <typename T>
ReduceFn vector_kernel(collx_op_t, Simd) {
  return nullptr;
}
template <typename F>
FinalizeFn vector_divide(Simd) {
  return nullptr;
}
#endif

template ReduceFn vector_kernel<int8_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<uint8_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<int16_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<uint16_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<int32_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<uint32_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<int64_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<uint64_t>(collx_op_t, Simd);
template ReduceFn vector_kernel<Float16>(collx_op_t, Simd);
template ReduceFn vector_kernel<BFloat16>(collx_op_t, Simd);
template ReduceFn vector_kernel<float>(collx_op_t, Simd);
template ReduceFn vector_kernel<double>(collx_op_t, Simd);
template FinalizeFn vector_divide<Float16>(Simd);
template FinalizeFn vector_divide<BFloat16>(Simd);
template FinalizeFn vector_divide<float>(Simd);
template FinalizeFn vector_divide<double>(Simd);

}  // namespace collx
