// The reduction kernels, one thread each: every case is tagged [kernel], which the TSan run of
// tools/run-tests leaves out.
#include <catch2/catch.hpp>

#include <cmath>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include "common/pattern.h"
#include "cuda/reduce.h"
#include "reduce/half.h"
#include "reduce/reduce.h"

using namespace collx;
using namespace collx::test;

namespace {

// Scalar reference, one element at a time, written independently of the kernels.
template <typename T>
T ref_op(collx_op_t op, T a, T b) {
  if constexpr (kHalf<T>) {
    const float x = to_float(a), y = to_float(b);
    float r;
    switch (op) {
      case COLLX_SUM: case COLLX_AVG: r = x + y; break;
      case COLLX_PROD: r = x * y; break;
      case COLLX_MIN: r = (std::isnan(x) || std::isnan(y)) ? (std::isnan(y) ? y : x) : std::min(x, y); break;
      default: r = (std::isnan(x) || std::isnan(y)) ? (std::isnan(y) ? y : x) : std::max(x, y); break;
    }
    if constexpr (std::is_same_v<T, Float16>) return to_float16(r);
    else return to_bfloat16(r);
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case COLLX_SUM: case COLLX_AVG: return a + b;
      case COLLX_PROD: return a * b;
      case COLLX_MIN:
        if (std::isnan(b)) return b;
        if (std::isnan(a)) return a;
        return b < a ? b : a;
      default:
        if (std::isnan(b)) return b;
        if (std::isnan(a)) return a;
        return b > a ? b : a;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    const uint64_t x = static_cast<U>(a), y = static_cast<U>(b);
    switch (op) {
      case COLLX_SUM: return static_cast<T>(static_cast<U>(x + y));
      case COLLX_PROD: return static_cast<T>(static_cast<U>(x * y));
      case COLLX_MIN: return std::min(a, b);
      case COLLX_MAX: return std::max(a, b);
      case COLLX_BAND: return static_cast<T>(x & y);
      case COLLX_BOR: return static_cast<T>(x | y);
      default: return static_cast<T>(x ^ y);
    }
  }
}

template <typename T>
std::vector<T> random_values(size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t bits = rng();
    if constexpr (kIsFloat<T>) {
      // Mostly ordinary numbers, with NaN, infinities and signed zeros mixed in.
      const double specials[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY,
                                 0.0, -0.0};
      const double x = (bits % 17 == 0) ? specials[(bits >> 8) % 5]
                                        : (static_cast<double>(bits >> 11) / (1ull << 53) - 0.5) * 200;
      v[i] = from_double<T>(x);
    } else {
      T x;
      std::memcpy(&x, &bits, sizeof x);
      v[i] = x;
    }
  }
  return v;
}

// Every vector level this CPU has, the scalar one included.
std::vector<Simd> simd_levels() {
  std::vector<Simd> v;
  for (int l = 0; l <= static_cast<int>(best_simd()); ++l) v.push_back(static_cast<Simd>(l));
  return v;
}

template <typename T>
void check_kernel(collx_dtype_t d, collx_op_t op, Simd simd) {
  Reducer red;
  REQUIRE(make_reducer(d, op, &red, simd).ok());
  REQUIRE(red.elem_size == sizeof(T));
  std::mt19937_64 rng(d * 100 + op);
  if (simd != Simd::kScalar) {  // a kernel of its own at each level, not the scalar one's
    Reducer scalar;
    REQUIRE(make_reducer(d, op, &scalar, Simd::kScalar).ok());
    CHECK(red.reduce != scalar.reduce);
  }
  for (size_t n : {0ul, 1ul, 3ul, 16ul, 47ul, 1037ul, 4099ul}) {
    const auto a = random_values<T>(n, rng), b = random_values<T>(n, rng);
    std::vector<T> expect(n);
    for (size_t i = 0; i < n; ++i) expect[i] = ref_op(op, a[i], b[i]);
    // Separate destination, then dst aliasing a, then dst aliasing b.
    std::vector<T> out(n), x = a, y = b;
    red(out.data(), a.data(), b.data(), n);
    red(x.data(), x.data(), b.data(), n);
    red(y.data(), a.data(), y.data(), n);
    INFO(collx_dtype_name(d) << " " << collx_op_name(op) << " n=" << n << " "
                              << simd_name(simd));
    // memcmp's pointers must not be null, even for 0 bytes (empty vectors have none).
    auto same = [&](const std::vector<T>& v) {
      return n == 0 || std::memcmp(v.data(), expect.data(), n * sizeof(T)) == 0;
    };
    CHECK(same(out));
    CHECK(same(x));
    CHECK(same(y));
    // Buffers at any byte offset (a caller may pass a double that follows a header byte): the
    // same bits, separate and in place, and nothing written around the output.
    for (size_t at : {1ul, 2ul, 3ul, 5ul, 7ul}) {
      if (n == 0) break;
      const size_t bytes = n * sizeof(T);
      std::vector<uint8_t> ua(bytes + 8), ub(bytes + 8), uo(bytes + 16, 0xcd);
      std::memcpy(ua.data() + (at + 2) % 8, a.data(), bytes);
      std::memcpy(ub.data() + (at + 5) % 8, b.data(), bytes);
      red(uo.data() + at, ua.data() + (at + 2) % 8, ub.data() + (at + 5) % 8, n);
      std::vector<uint8_t> want(bytes + 16, 0xcd);
      std::memcpy(want.data() + at, expect.data(), bytes);
      INFO("output at +" << at);
      CHECK(uo == want);
      std::memcpy(ua.data() + at, a.data(), bytes);
      red(ua.data() + at, ua.data() + at, ub.data() + (at + 5) % 8, n);
      CHECK(std::memcmp(ua.data() + at, expect.data(), bytes) == 0);
      if (red.finalize != nullptr) {  // avg's division, in place at the offset
        std::vector<T> divided = expect;
        red.finalize(divided.data(), n, 3);
        red.finalize(uo.data() + at, n, 3);
        CHECK(std::memcmp(uo.data() + at, divided.data(), bytes) == 0);
      }
    }
  }
}

}  // namespace

TEST_CASE("every dtype x op kernel matches the scalar reference bitwise, at any offset",
          "[kernel]") {
  for (Simd simd : simd_levels()) {
    int checked = 0;
    for (collx_dtype_t d : all_dtypes()) {
      for (collx_op_t op : all_ops()) {
        if (!op_valid(d, op)) continue;
        with_dtype(d, [&](auto tag) { check_kernel<decltype(tag)>(d, op, simd); });
        ++checked;
      }
    }
    CHECK(checked == 8 * 7 + 4 * 5);  // integers: all but avg; floats: sum prod min max avg
  }
  if (best_simd() != Simd::kAvx512) WARN("no AVX-512 on this CPU: its kernels not run");
  if (best_simd() == Simd::kScalar) WARN("no AVX2 + F16C on this CPU: their kernels not run");
}

// Each of the 65,536 bit patterns (subnormals, infinities, NaNs with every payload, both
// zeros) against a partner that runs through all of them in another order, and against a few
// fixed ones; sums of two values with one exponent are ties half the time. Every level gives
// the reference's bits, but for two NaNs: which payload comes out then depends on the order of
// the operands, which a compiler may swap in `x + y` (x86 returns the first operand's), in the
// reference and in the scalar kernel alike (a TSan build's scalar kernel differs from the
// vector ones there), so there the result need only be NaN.
TEST_CASE("float16 and bfloat16 kernels and avg give the reference's bits for every value, every level",
          "[kernel]") {
  auto check = [](auto tag, collx_dtype_t d, collx_op_t op, Simd simd) {
    using T = decltype(tag);
    Reducer red;
    REQUIRE(make_reducer(d, op, &red, simd).ok());
    for (uint32_t partner : {0u, 1u, 0x8001u, 0x3c00u, 0x7fffu}) {
      std::vector<T> a(65536 + 5), b(a.size()), out(a.size()), want(a.size());
      std::vector<bool> two_nans(a.size());
      for (uint32_t i = 0; i < a.size(); ++i) {
        a[i].bits = static_cast<uint16_t>(i);
        // An odd multiplier permutes the 16-bit values; partner 0 uses it, the others are one
        // value for all.
        b[i].bits = static_cast<uint16_t>(partner == 0 ? i * 40503u + 7 : partner);
        want[i] = ref_op(op, a[i], b[i]);
        two_nans[i] = std::isnan(to_float(a[i])) && std::isnan(to_float(b[i]));
      }
      auto wrong = [&](const std::vector<T>& got) {
        size_t n = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          n += two_nans[i] ? !std::isnan(to_float(got[i])) : got[i].bits != want[i].bits;
        }
        return n;
      };
      INFO(collx_dtype_name(d) << " " << collx_op_name(op) << " " << simd_name(simd)
                               << " partner " << partner);
      red(out.data(), a.data(), b.data(), a.size());
      CHECK(wrong(out) == 0);
      red(b.data(), a.data(), b.data(), a.size());  // in place, into b
      CHECK(wrong(b) == 0);
    }
  };
  for (Simd simd : simd_levels()) {
    for (collx_op_t op : {COLLX_SUM, COLLX_PROD, COLLX_MIN, COLLX_MAX}) {
      check(Float16{}, COLLX_FLOAT16, op, simd);
      check(BFloat16{}, COLLX_BFLOAT16, op, simd);
    }
  }
}

// avg's division by the rank count, in place, at every level: the float quotient rounded back.
// The vector levels compute the quotient without a division up to kReciprocalMaxRanks
// (vector.cc proves it the division's); here every value at every rank count to 1,025, at a few
// above, and past the bound, where they divide.
TEST_CASE("avg of float16 and bfloat16 gives the rounded quotient for every value, every level",
          "[kernel]") {
  auto check_avg = [](auto tag, collx_dtype_t d, const std::vector<int>& rank_counts) {
    using T = decltype(tag);
    std::vector<Reducer> reds;
    for (Simd simd : simd_levels()) {
      REQUIRE(make_reducer(d, COLLX_AVG, &reds.emplace_back(), simd).ok());
      REQUIRE(reds.back().finalize != nullptr);
    }
    std::vector<T> want(65536 + 5), v(want.size());
    size_t wrong = 0, checked = 0;
    for (int ranks : rank_counts) {
      for (uint32_t i = 0; i < want.size(); ++i) {
        const float q = to_float(T{static_cast<uint16_t>(i)}) / static_cast<float>(ranks);
        if constexpr (std::is_same_v<T, Float16>) want[i] = to_float16(q);
        else want[i] = to_bfloat16(q);
      }
      for (const Reducer& red : reds) {
        for (uint32_t i = 0; i < v.size(); ++i) v[i].bits = static_cast<uint16_t>(i);
        red.finalize(v.data(), v.size(), ranks);
        for (uint32_t i = 0; i < v.size(); ++i) wrong += v[i].bits != want[i].bits;
        ++checked;
      }
      if (wrong != 0) {
        FAIL_CHECK(collx_dtype_name(d) << " avg, " << ranks << " ranks: " << wrong << " wrong");
        wrong = 0;
      }
    }
    CHECK(checked == rank_counts.size() * simd_levels().size());
  };
  std::vector<int> rank_counts;
  for (int p = 1; p <= 1025; ++p) rank_counts.push_back(p);
  for (int p :
       {4099, 65535, 65536, 131070, 393216, kReciprocalMaxRanks, kReciprocalMaxRanks + 1}) {
    rank_counts.push_back(p);
  }
  check_avg(BFloat16{}, COLLX_BFLOAT16, rank_counts);
  check_avg(Float16{}, COLLX_FLOAT16, rank_counts);
}

namespace {
// Sums whose quotient is hardest to get right without a division: the specials; every 2^16th
// bit pattern and random ones (every binade, subnormals included); dense runs of neighbours; and
// those whose quotient by `ranks` is a midpoint between two subnormals, where the corrected
// product rounds toward zero instead of to even (vector.cc's step 4).
template <typename T>
std::vector<T> hard_sums(int ranks, std::mt19937_64& rng) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0), -T(0), L::infinity(), -L::infinity(), L::quiet_NaN(),
                      -L::quiet_NaN(), L::max(), -L::max(), L::min(), L::denorm_min(),
                      T(ranks), T(1) / T(3)};
  auto from = [](Bits b) { return std::bit_cast<T>(b); };
  v.push_back(from(std::bit_cast<Bits>(L::quiet_NaN()) | 0x12345));  // a payload
  const Bits top = Bits(1) << (sizeof(T) * 8 - 1);
  for (Bits b = 0; b < 65536; ++b) v.push_back(from(b * (top >> 15)));
  for (int i = 0; i < 8192; ++i) v.push_back(from(static_cast<Bits>(rng())));
  for (T start : {T(1), T(ranks), L::min() * T(ranks), T(1) / T(ranks)}) {
    Bits b = std::bit_cast<Bits>(start) - 512;
    for (int i = 0; i < 1024; ++i) v.push_back(from(b++));
  }
  if (ranks % 2 == 0) {  // s = p m with m an odd multiple of half the smallest subnormal
    for (Bits odd = 1; odd < 4096; odd += 2) {
      const T s = L::denorm_min() * T(Bits(ranks / 2) * odd);
      v.push_back(s);
      v.push_back(-s);
    }
  }
  return v;
}
}  // namespace

// float32 and float64 cannot be checked value by value; the quotient's proof is in vector.cc.
TEST_CASE("avg of float32 and float64 gives the division's bits, every level", "[kernel]") {
  auto check_avg = [](auto tag, collx_dtype_t d) {
    using T = decltype(tag);
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    std::mt19937_64 rng(42);
    std::vector<int> rank_counts;
    for (int p = 1; p <= 70; ++p) rank_counts.push_back(p);
    for (int p : {255, 1000, 1023, 1024, 1025, 4099, 65535, 65536, 131070, kReciprocalMaxRanks,
                  kReciprocalMaxRanks + 1}) {
      rank_counts.push_back(p);
    }
    for (Simd simd : simd_levels()) {
      Reducer red;
      REQUIRE(make_reducer(d, COLLX_AVG, &red, simd).ok());
      REQUIRE(red.finalize != nullptr);
      for (int ranks : rank_counts) {
        const std::vector<T> sums = hard_sums<T>(ranks, rng);
        std::vector<T> v = sums;
        red.finalize(v.data(), v.size(), ranks);
        size_t wrong = 0;
        for (size_t i = 0; i < v.size(); ++i) {
          const T want = sums[i] / static_cast<T>(ranks);
          wrong += std::bit_cast<Bits>(v[i]) != std::bit_cast<Bits>(want);
        }
        if (wrong != 0) {
          FAIL_CHECK(collx_dtype_name(d) << " avg, " << simd_name(simd) << ", " << ranks
                                         << " ranks: " << wrong << " of " << v.size() << " wrong");
        }
      }
    }
  };
  check_avg(float{}, COLLX_FLOAT32);
  check_avg(double{}, COLLX_FLOAT64);
}

TEST_CASE("pairs without meaning are unsupported, out-of-range values invalid", "[kernel]") {
  Reducer red;
  CHECK(make_reducer(COLLX_INT32, COLLX_AVG, &red).code() == COLLX_ERR_UNSUPPORTED);
  CHECK(make_reducer(COLLX_FLOAT32, COLLX_BAND, &red).code() == COLLX_ERR_UNSUPPORTED);
  CHECK(make_reducer(COLLX_BFLOAT16, COLLX_BXOR, &red).code() == COLLX_ERR_UNSUPPORTED);
  const Status s = make_reducer(COLLX_FLOAT16, COLLX_BOR, &red);
  CHECK(s.message().find("float16") != std::string::npos);
  CHECK(make_reducer(static_cast<collx_dtype_t>(99), COLLX_SUM, &red).code() ==
        COLLX_ERR_INVALID_ARG);
  CHECK(make_reducer(COLLX_INT8, static_cast<collx_op_t>(-1), &red).code() ==
        COLLX_ERR_INVALID_ARG);
  if (best_simd() != Simd::kAvx512) {  // a level this CPU lacks
    const Status no = make_reducer(COLLX_BFLOAT16, COLLX_SUM, &red, Simd::kAvx512);
    CHECK(no.code() == COLLX_ERR_UNSUPPORTED);
    CHECK(no.message().find("avx512") != std::string::npos);
  }
}

// The levels' CPU checks agree with the kernel's view of the CPU (the flags of /proc/cpuinfo):
// every feature a level needs is there, and bfloat16 is rounded by AVX-512 BF16 exactly where
// the CPU has it. (Only one way for the levels: valgrind's CPU offers less than the real one.)
TEST_CASE("the vector levels and AVX-512 BF16 are picked by the CPU's flags", "[kernel]") {
  std::ifstream info("/proc/cpuinfo");
  std::string line, flags;
  while (flags.empty() && std::getline(info, line)) {
    if (line.rfind("flags", 0) == 0) flags = line.substr(line.find(':') + 1) + " ";
  }
#if defined(__x86_64__)
  REQUIRE_FALSE(flags.empty());
#endif
  INFO("flags:" << flags);
  auto has = [&](const char* f) {
    std::string word = " ";  // (not " " + f + " ": GCC 12 warns of a memcpy overlap there)
    word.append(f).push_back(' ');
    return flags.find(word) != std::string::npos;
  };
  if (best_simd() == Simd::kAvx512) {
    for (const char* f : {"avx512f", "avx512bw", "avx512dq", "avx512vl"}) CHECK(has(f));
  }
  if (best_simd() != Simd::kScalar) {
    for (const char* f : {"avx2", "f16c", "fma"}) CHECK(has(f));
  }
  CHECK(has_avx512_bf16() == (best_simd() == Simd::kAvx512 && has("avx512_bf16")));
}

TEST_CASE("min and max propagate NaN in either position (unlike fmin/fmax)", "[kernel]") {
  for (collx_dtype_t d : {COLLX_FLOAT16, COLLX_BFLOAT16, COLLX_FLOAT32, COLLX_FLOAT64}) {
    for (collx_op_t op : {COLLX_MIN, COLLX_MAX}) {
      with_dtype(d, [&](auto tag) {
        using T = decltype(tag);
        Reducer red;
        REQUIRE(make_reducer(d, op, &red).ok());
        const T nan = from_double<T>(std::numeric_limits<double>::quiet_NaN());
        const T one = from_double<T>(1.0), inf = from_double<T>(INFINITY);
        T a[3] = {nan, one, inf}, b[3] = {one, nan, nan}, out[3];
        red(out, a, b, 3);
        for (T v : out) CHECK(std::isnan(to_double(v)));
        T c[1] = {from_double<T>(-INFINITY)}, e[1] = {one}, o[1];
        red(o, c, e, 1);
        CHECK(to_double(o[0]) == (op == COLLX_MIN ? -INFINITY : 1.0));
      });
    }
  }
}

TEST_CASE("integer sum and prod wrap around without undefined behaviour", "[kernel]") {
  Reducer red;
  REQUIRE(make_reducer(COLLX_INT8, COLLX_SUM, &red).ok());
  int8_t a = 127, b = 1, o;
  red(&o, &a, &b, 1);
  CHECK(o == -128);
  REQUIRE(make_reducer(COLLX_UINT16, COLLX_PROD, &red).ok());
  uint16_t x = 65535, y = 65535, z;
  red(&z, &x, &y, 1);
  CHECK(z == 1);
  REQUIRE(make_reducer(COLLX_INT64, COLLX_PROD, &red).ok());
  int64_t m = INT64_MAX, n = 2, r;
  red(&r, &m, &n, 1);
  CHECK(r == -2);
}

TEST_CASE("float16 conversion is exact both ways and rounds to nearest even", "[kernel]") {
  int ties = 0;
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite non-negative half
    const Float16 v{static_cast<uint16_t>(h)};
    REQUIRE(to_float16(to_float(v)).bits == h);
    REQUIRE(to_float16(-to_float(v)).bits == (h | 0x8000));
    if (h + 1 < 0x7c00) {
      const float lo = to_float(v), hi = to_float(Float16{static_cast<uint16_t>(h + 1)});
      const float mid = lo + (hi - lo) / 2;  // exact in float
      const uint16_t even = (h % 2 == 0) ? h : h + 1;
      REQUIRE(to_float16(mid).bits == even);
      REQUIRE(to_float16(std::nextafter(mid, 0.f)).bits == h);
      REQUIRE(to_float16(std::nextafter(mid, INFINITY)).bits == h + 1);
      ++ties;
    }
  }
  CHECK(ties == 0x7c00 - 1);
  CHECK(to_float(Float16{0x3c00}) == 1.0f);
  CHECK(to_float(Float16{0x0001}) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(to_float16(65504.f).bits == 0x7bff);                   // largest finite
  CHECK(to_float16(65519.f).bits == 0x7bff);
  CHECK(to_float16(65520.f).bits == 0x7c00);  // rounds to infinity
  CHECK(to_float16(1e30f).bits == 0x7c00);
  CHECK(to_float16(-INFINITY).bits == 0xfc00);
  CHECK(std::isnan(to_float(to_float16(NAN))));
  CHECK(std::isinf(to_float(Float16{0x7c00})));
  CHECK(std::isnan(to_float(Float16{0x7e01})));
}

TEST_CASE("bfloat16 conversion is exact both ways and rounds to nearest even", "[kernel]") {
  for (uint32_t h = 0; h < 0x7f80; ++h) {
    const BFloat16 v{static_cast<uint16_t>(h)};
    REQUIRE(to_bfloat16(to_float(v)).bits == h);
    if (h + 1 < 0x7f80) {
      const float lo = to_float(v), hi = to_float(BFloat16{static_cast<uint16_t>(h + 1)});
      const float mid = lo + (hi - lo) / 2;
      REQUIRE(to_bfloat16(mid).bits == ((h % 2 == 0) ? h : h + 1));
      REQUIRE(to_bfloat16(std::nextafter(mid, 0.f)).bits == h);
      REQUIRE(to_bfloat16(std::nextafter(mid, INFINITY)).bits == h + 1);
    }
  }
  CHECK(to_bfloat16(3.4e38f).bits == 0x7f80);  // rounds up to infinity
  CHECK(std::isnan(to_float(to_bfloat16(NAN))));
  // A NaN whose payload sits only in the low bits must stay a NaN, not become infinity.
  CHECK(std::isnan(to_float(to_bfloat16(std::bit_cast<float>(0x7f800001u)))));
}

TEST_CASE("avg divides the sum by the number of ranks", "[kernel]") {
  Reducer red;
  REQUIRE(make_reducer(COLLX_FLOAT32, COLLX_AVG, &red).ok());
  REQUIRE(red.finalize != nullptr);
  float v[2] = {9.f, 1.f};
  red.finalize(v, 2, 3);
  CHECK(v[0] == 3.f);
  CHECK(v[1] == 1.f / 3.f);
  REQUIRE(make_reducer(COLLX_BFLOAT16, COLLX_AVG, &red).ok());
  BFloat16 h[1] = {to_bfloat16(6.f)};
  red.finalize(h, 1, 4);
  CHECK(to_float(h[0]) == 1.5f);
  REQUIRE(make_reducer(COLLX_FLOAT32, COLLX_SUM, &red).ok());
  CHECK(red.finalize == nullptr);
}

#if defined(__x86_64__)
#include <immintrin.h>

namespace {
__attribute__((target("f16c"))) uint32_t hw_to_float_bits(uint16_t h) {
  return std::bit_cast<uint32_t>(_cvtsh_ss(h));
}
__attribute__((target("f16c"))) uint16_t hw_to_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
}  // namespace

TEST_CASE("software float16 conversions give the same bits as F16C, NaNs included", "[kernel]") {
  if (!cpu_has_f16c()) {
    WARN("no F16C on this CPU: hardware comparison skipped");
    return;
  }
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    if (std::bit_cast<uint32_t>(to_float(Float16{static_cast<uint16_t>(h)})) !=
        hw_to_float_bits(static_cast<uint16_t>(h))) {
      ++mismatches;
    }
  }
  CHECK(mismatches == 0);
  mismatches = 0;
  // Every float exponent, mantissas around the half rounding boundaries, NaN payloads.
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 0x1001ull * 7) {
    const auto f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (to_float16(f).bits != hw_to_half(f)) ++mismatches;
  }
  CHECK(mismatches == 0);
}
#endif

// The GPU kernels' division of a message (cuda/reduce.h): plain arithmetic on addresses, checked
// here because the kernels themselves run only where there is a GPU.
TEST_CASE("the GPU reduction packs 16 bytes wherever every pointer lies as far from a boundary",
          "[kernel]") {
  alignas(16) static unsigned char mem[4096];
  const auto at = [&](size_t offset) { return static_cast<void*>(mem + offset); };
  const auto split = [&](size_t dst, std::vector<size_t> ins, size_t count, size_t elem) {
    std::vector<const void*> in;
    for (size_t o : ins) in.push_back(at(o));
    const cuda::ReduceSplit s =
        cuda::reduce_split(at(dst), in.data(), static_cast<int>(in.size()), count, elem);
    return std::vector<size_t>{s.head, s.packs, s.tail};
  };
  using V = std::vector<size_t>;
  CHECK(split(0, {0, 32, 1024}, 10, 4) == V{0, 2, 2});   // aligned: packs, then the rest
  CHECK(split(4, {4, 20, 100}, 10, 4) == V{3, 1, 3});    // 12 bytes to the boundary first
  CHECK(split(4, {4}, 7, 4) == V{3, 1, 0});
  CHECK(split(4, {4}, 3, 4) == V{3, 0, 0});              // no pack fits: scalar
  CHECK(split(4, {4}, 2, 4) == V{2, 0, 0});
  CHECK(split(1, {1, 17}, 100, 1) == V{15, 5, 5});       // uint8: 15 elements first
  CHECK(split(8, {24}, 9, 8) == V{1, 4, 0});             // float64
  CHECK(split(2, {18}, 9, 2) == V{9, 0, 0});
  CHECK(split(2, {18}, 15, 2) == V{7, 1, 0});            // float16
  CHECK(split(0, {0}, 0, 4) == V{0, 0, 0});
  CHECK(split(4, {4}, 0, 4) == V{0, 0, 0});
  // Inputs at other distances from a boundary, or elements off their own alignment: scalar.
  CHECK(split(4, {8}, 100, 4) == V{100, 0, 0});
  CHECK(split(0, {0, 0, 4}, 100, 4) == V{100, 0, 0});
  CHECK(split(2, {2}, 100, 4) == V{100, 0, 0});
  CHECK(split(3, {3}, 100, 2) == V{100, 0, 0});
  // Everywhere: the parts add up, and the packs start on a boundary for every pointer.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const size_t elem = size_t{1} << (rng() % 4), count = rng() % 70;
    const size_t phase = (rng() % (16 / elem)) * elem;
    V ins;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 8); k < n; ++k) {
      ins.push_back(16 * (1 + rng() % 100) + (rng() % 8 == 0 ? (phase + elem) % 16 : phase));
    }
    const V s = split(16 * 120 + phase, ins, count, elem);
    INFO("elem " << elem << ", count " << count << ", phase " << phase);
    REQUIRE(s[0] + s[1] * (16 / elem) + s[2] == count);
    bool same = true;
    for (size_t o : ins) same = same && o % 16 == phase;
    if (s[1] > 0) {
      REQUIRE(same);
      REQUIRE((phase + s[0] * elem) % 16 == 0);
      REQUIRE(s[2] < 16 / elem);
    } else {
      REQUIRE(s[0] == count);
    }
  }
}
