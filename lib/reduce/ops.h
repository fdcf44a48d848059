// The scalar reduction operations, one struct per op: apply(a, b) with a the lower-ranked
// group's operand. Host and device code: the CPU kernels (reduce.cc) and the CUDA kernels
// (cuda/reduce.cu) compute exactly these expressions, so their results are bitwise the same.
#pragma once

#include <type_traits>

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

}  // namespace collx
