// Inputs whose reductions are exact in every dtype, and the expected result computed by a
// scalar reference independent of the library's kernels. Shared by the tests and the
// benchmark's -c mode. rank r's element i is value(r, i); the expected element is the
// reduction over ranks 0..p-1, so results can be compared bitwise.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "collx/collx.h"
#include "reduce/dtype.h"
#include "reduce/half.h"
#include "reduce/ops.h"

namespace collx::test {

template <typename T>
constexpr bool kIsFloat = kHalf<T> || std::is_floating_point_v<T>;

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Float16>) return to_float16(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, BFloat16>) return to_bfloat16(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
  else return static_cast<T>(static_cast<int64_t>(v));  // modular for unsigned targets
}

template <typename T>
double to_double(T v) {
  if constexpr (kHalf<T>) return to_float(v);
  else return static_cast<double>(v);
}

inline bool op_valid(collx_dtype_t d, collx_op_t op) {
  const bool is_float = d == COLLX_FLOAT16 || d == COLLX_BFLOAT16 || d == COLLX_FLOAT32 ||
                        d == COLLX_FLOAT64;
  if (op == COLLX_AVG) return is_float;
  if (op == COLLX_BAND || op == COLLX_BOR || op == COLLX_BXOR) return !is_float;
  return true;
}

// Integer-valued inputs chosen per op so that the reduction over up to ~60 ranks is exact.
inline int64_t value(collx_op_t op, bool is_signed, int r, size_t i) {
  const int64_t ii = static_cast<int64_t>(i % 1000003), rr = r;
  switch (op) {
    case COLLX_SUM:
    case COLLX_AVG: return (ii * 7 + rr * 3) % 5;
    case COLLX_PROD:
      if ((ii + rr) % 3 == 0) return 2;
      return (is_signed && (ii + 2 * rr) % 5 == 0) ? -1 : 1;
    case COLLX_MIN:
    case COLLX_MAX: return (ii * 13 + rr * 7) % 11 - (is_signed ? 5 : 0);
    default: {
      uint64_t h = (static_cast<uint64_t>(ii) + 1) * 0x9e3779b97f4a7c15ull;
      h ^= (static_cast<uint64_t>(rr) + 1) * 0xbf58476d1ce4e5b9ull;
      return static_cast<int64_t>(h >> 1);
    }
  }
}

// Element i of the T array at `buf`, which need not be aligned for T (the tests pass buffers
// at any byte offset, as callers may).
template <typename T>
void store(void* buf, size_t i, T v) {
  std::memcpy(static_cast<uint8_t*>(buf) + i * sizeof(T), &v, sizeof(T));
}

inline void fill_input(collx_dtype_t d, collx_op_t op, int rank, size_t count, void* buf) {
  with_dtype(d, [&](auto tag) {
    using T = decltype(tag);
    constexpr bool is_signed = kIsFloat<T> || std::is_signed_v<T>;
    for (size_t i = 0; i < count; ++i) {
      const int64_t v = value(op, is_signed, rank, i);
      if constexpr (kIsFloat<T>) store(buf, i, from_double<T>(static_cast<double>(v)));
      else store(buf, i, static_cast<T>(static_cast<uint64_t>(v)));  // bit patterns kept exactly
    }
  });
}

// The exact result of reducing fill_input over ranks 0..p-1.
inline void fill_expected(collx_dtype_t d, collx_op_t op, int p, size_t count, void* buf) {
  with_dtype(d, [&](auto tag) {
    using T = decltype(tag);
    constexpr bool is_signed = kIsFloat<T> || std::is_signed_v<T>;
    for (size_t i = 0; i < count; ++i) {
      int64_t acc = value(op, is_signed, 0, i);
      for (int r = 1; r < p; ++r) {
        const int64_t v = value(op, is_signed, r, i);
        switch (op) {
          case COLLX_SUM: case COLLX_AVG: acc += v; break;
          case COLLX_PROD: acc *= v; break;
          case COLLX_MIN: acc = v < acc ? v : acc; break;
          case COLLX_MAX: acc = v > acc ? v : acc; break;
          case COLLX_BAND: acc &= v; break;
          case COLLX_BOR: acc |= v; break;
          default: acc ^= v; break;
        }
      }
      if constexpr (!kIsFloat<T>) {
        // Bitwise ops on the narrow type: truncate the 64-bit pattern.
        store(buf, i, static_cast<T>(static_cast<uint64_t>(acc)));
      } else if (op == COLLX_AVG) {
        // The library divides the (exact) sum in the element type; half types in float.
        if constexpr (kHalf<T>) {
          store(buf, i, from_double<T>(static_cast<float>(acc) / static_cast<float>(p)));
        } else {
          store(buf, i, static_cast<T>(static_cast<T>(acc) / static_cast<T>(p)));
        }
      } else {
        store(buf, i, from_double<T>(static_cast<double>(acc)));
      }
    }
  });
}

inline std::vector<collx_dtype_t> all_dtypes() {
  std::vector<collx_dtype_t> v;
  for (int d = 0; d < COLLX_DTYPE_COUNT; ++d) v.push_back(static_cast<collx_dtype_t>(d));
  return v;
}

inline std::vector<collx_op_t> all_ops() {
  std::vector<collx_op_t> v;
  for (int o = 0; o < COLLX_OP_COUNT; ++o) v.push_back(static_cast<collx_op_t>(o));
  return v;
}

}  // namespace collx::test
