#include "memory/host_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace collx {

#if defined(__x86_64__)
namespace {

// Copies the whole 64-byte blocks of n bytes with SSE2, 16 bytes per load and store (streaming
// stores: `kStream`; d then 16-byte aligned); returns the bytes left over (under 64).
template <bool kStream>
size_t copy_blocks(uint8_t*& d, const uint8_t*& s, size_t n) {
  for (; n >= 64; n -= 64, d += 64, s += 64) {
    const auto* in = reinterpret_cast<const __m128i*>(s);
    auto* out = reinterpret_cast<__m128i*>(d);
    const __m128i v[4] = {_mm_loadu_si128(in), _mm_loadu_si128(in + 1), _mm_loadu_si128(in + 2),
                          _mm_loadu_si128(in + 3)};
    for (int i = 0; i < 4; ++i) {
      if constexpr (kStream) {
        _mm_stream_si128(out + i, v[i]);
      } else {
        _mm_storeu_si128(out + i, v[i]);
      }
    }
  }
  return n;
}

}  // namespace
#endif

void copy_cached(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  const uintptr_t distance =
      (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) % 4096;
  if (distance != 0 && distance < 64) {
    auto* d = static_cast<uint8_t*>(dst);
    const auto* s = static_cast<const uint8_t*>(src);
    n = copy_blocks<false>(d, s, n);
    std::memcpy(d, s, n);  // under 64 bytes: glibc's vector moves, never rep movsb
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

void copy_streaming(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const size_t head = std::min(n, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n = copy_blocks<true>(d, s, n - head);
  std::memcpy(d, s, n);
  _mm_sfence();
#else
  std::memcpy(dst, src, n);
#endif
}

}  // namespace collx
