// The scalar kernels: one element at a time, in the arithmetic of ops.h. They are every type's
// kernels at the scalar level (the compiler vectorises the loops of the types the baseline
// x86-64 has, with SSE2), and the vector kernels' tails (vector.cc).
#pragma once

#include <cstddef>

#include "reduce/ops.h"

namespace collx::scalar {

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

// The loop of every kernel but float16's and bfloat16's vector ones. Always inlined: so that
// vector.cc's kernels compile it with their instruction sets. ivdep: dst may equal a or b,
// which is safe element by element; without it GCC would add an overlap check that fails for
// in-place use and falls back to scalar code (clang: assume_safety, the same promise).
template <typename T, typename Op>
[[gnu::always_inline]] inline void loop(void* dst, const void* a, const void* b, size_t n) {
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#else
#pragma GCC ivdep
#endif
  for (size_t i = 0; i < n; ++i) store(dst, i, combine<Op>(load<T>(a, i), load<T>(b, i)));
}

template <typename T, typename Op>
void kernel(void* dst, const void* a, const void* b, size_t n) {
  loop<T, Op>(dst, a, b, n);
}

template <typename T>
void divide(void* buf, size_t n, int ranks) {
  for (size_t i = 0; i < n; ++i) store(buf, i, divide_by(load<T>(buf, i), ranks));
}

}  // namespace collx::scalar
