// Bf16Quotient's test for tiny sums, against its definition: at every rank count 1 ..
// kReciprocalMaxRanks and each vector level, a block divides exactly where it holds a sum
// 0 < |s| < p 2^-101 (`small`: below it q, r or the result may be subnormal). Boundaries at
// every rank count (each value broadcast, and each lane alone among zeros), every bfloat16
// value at every 1024th rank count and the last. Includes the kernels' source for the type,
// which lives in an unnamed namespace: a trial, not kept, so apply guard.patch first
// (`git apply docs/cpu-runs/2026-11-28g/bf16-guard/guard.patch`). Built from the repository root:
//   o=build/lib/libcollx_internal.a.p; g++ -O2 -std=c++20 -Ilib -Iinclude \
//     docs/cpu-runs/2026-11-28g/bf16-guard/guard.cc $o/api_status.cc.o -Lbuild/lib -lcollx \
//     -Wl,-rpath,$PWD/build/lib -o /tmp/guard
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "reduce/reduce.cc"

namespace {

float value(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

bool wanted(uint16_t bits, int p) {
  const float a = std::fabs(value(bits));
  return a > 0 && a < std::ldexp(float(p), -101);
}

__attribute__((target("avx2,fma,f16c"))) bool flagged(const collx::Bf16Quotient& q,
                                                        const uint16_t* lanes, collx::Avx2) {
  return q.any_tiny(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lanes)));
}
__attribute__((target("avx512f,avx512bw"))) bool flagged(const collx::Bf16Quotient& q,
                                                          const uint16_t* lanes, collx::Avx512) {
  return q.any_tiny(_mm512_loadu_si512(lanes));
}

template <typename W>
long check(int p, bool every_value, W w, int width) {
  const collx::Bf16Quotient q(static_cast<float>(p));
  long wrong = 0;
  uint16_t lanes[32];
  const auto one = [&](uint16_t bits) {
    for (int i = 0; i < width; ++i) lanes[i] = bits;
    if (flagged(q, lanes, w) != wanted(bits, p)) ++wrong;
    for (int at = 0; at < width; ++at) {  // alone among zeros (+0 and -0)
      for (int i = 0; i < width; ++i) lanes[i] = i % 2 ? 0x8000 : 0;
      lanes[at] = bits;
      if (flagged(q, lanes, w) != wanted(bits, p)) ++wrong;
    }
  };
  if (every_value) {
    for (uint32_t b = 0; b < 65536; ++b) one(uint16_t(b));
  } else {
    for (int t = -2; t <= 2; ++t) {
      for (uint16_t sign : {0, 0x8000}) one(uint16_t(sign | (q.tiny + t)));
    }
    for (uint16_t b : {0x0000, 0x8000, 0x0001, 0x8001, 0x7f80, 0xff80, 0x7fc0, 0x7fff, 0xffff}) {
      one(b);
    }
  }
  return wrong;
}

}  // namespace

int main() {
  long wrong = 0, checked = 0;
  for (int p = 1; p <= collx::kReciprocalMaxRanks; ++p) {
    const bool every = p % 1024 == 1 || p == collx::kReciprocalMaxRanks;
    if (collx::best_simd() >= collx::Simd::kAvx2) wrong += check(p, every, collx::Avx2{}, 16);
    if (collx::best_simd() >= collx::Simd::kAvx512) wrong += check(p, every, collx::Avx512{}, 32);
    ++checked;
  }
  std::printf("%ld rank counts, levels up to %s: %ld wrong\n", checked,
              collx::simd_name(collx::best_simd()), wrong);
  return wrong != 0;
}
