// The scalar reduction operations, one struct per op: apply(a, b) with a the lower-ranked
// group's operand. Host and device code: the CPU kernels (reduce.cc) and the CUDA kernels
// (cuda/reduce.cu) compute exactly these expressions, so their results are bitwise the same.
#pragma once

#include <type_traits>

#include "collx/collx.h"
#include "reduce/half.h"  // COLLX_HD

namespace collx {

// Integer arithmetic is done on unsigned types (at least unsigned int, so that 16-bit
// multiplication cannot overflow a promoted int): wraparound, no undefined behaviour.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct Sum {
  template <typename T>
  COLLX_HD static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(Wide<T>(a) + Wide<T>(b));
    else return a + b;
  }
};
struct Prod {
  template <typename T>
  COLLX_HD static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(Wide<T>(a) * Wide<T>(b));
    else return a * b;
  }
};
// NaN-propagating: NaN if either input is NaN (b's NaN if both are, b being the later group).
struct Min {
  template <typename T>
  COLLX_HD static T apply(T a, T b) {
    T r = b < a ? b : a;
    if constexpr (std::is_floating_point_v<T>) r = (b != b) ? b : r;
    return r;
  }
};
struct Max {
  template <typename T>
  COLLX_HD static T apply(T a, T b) {
    T r = b > a ? b : a;
    if constexpr (std::is_floating_point_v<T>) r = (b != b) ? b : r;
    return r;
  }
};
struct Band {
  template <typename T>
  COLLX_HD static T apply(T a, T b) { return a & b; }
};
struct Bor {
  template <typename T>
  COLLX_HD static T apply(T a, T b) { return a | b; }
};
struct Bxor {
  template <typename T>
  COLLX_HD static T apply(T a, T b) { return a ^ b; }
};

template <typename T>
constexpr bool kHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// float -> a 16-bit floating type, round-to-nearest-even.
template <typename H>
COLLX_HD H round_to(float v) {
  if constexpr (std::is_same_v<H, Float16>) return to_float16(v);
  else return to_bfloat16(v);
}

// a op b in T's arithmetic: 16-bit floating types are widened to float and rounded back after
// every pairwise step. The one expression of every CPU and GPU kernel.
template <typename Op, typename T>
COLLX_HD T combine(T a, T b) {
  if constexpr (kHalf<T>) return round_to<T>(Op::apply(to_float(a), to_float(b)));
  else return Op::apply(a, b);
}

// avg's final step: the sum divided by the rank count, in the same arithmetic.
template <typename T>
COLLX_HD T divide_by(T sum, int ranks) {
  if constexpr (kHalf<T>) return round_to<T>(to_float(sum) / static_cast<float>(ranks));
  else return sum / static_cast<T>(ranks);
}

// Calls f(Op{}) with the struct of `op` for elements of type T (Sum for avg, which then
// divides once by the rank count: divide_by). False, and f not called, where op has no
// meaning for T (bitwise ops on floating types, avg on integers) or is no op at all.
template <typename T, typename F>
bool with_op(collx_op_t op, F&& f) {
  constexpr bool kInt = std::is_integral_v<T>;
  switch (op) {
    case COLLX_SUM: f(Sum{}); return true;
    case COLLX_PROD: f(Prod{}); return true;
    case COLLX_MIN: f(Min{}); return true;
    case COLLX_MAX: f(Max{}); return true;
    case COLLX_AVG:
      if constexpr (!kInt) {
        f(Sum{});
        return true;
      }
      break;
    case COLLX_BAND:
      if constexpr (kInt) {
        f(Band{});
        return true;
      }
      break;
    case COLLX_BOR:
      if constexpr (kInt) {
        f(Bor{});
        return true;
      }
      break;
    case COLLX_BXOR:
      if constexpr (kInt) {
        f(Bxor{});
        return true;
      }
      break;
    default: break;
  }
  return false;
}

}  // namespace collx
