// Every float32 sum in [1, 2) (all 2^23 of them) divided by every rank count from FIRST to
// LAST, through libcollx's avg at each vector level, against the division. Powers of two scale
// every step of the quotient exactly, but below the float lanes' guard (0 < |s| < p 2^-101,
// where they divide) and at overflow (never: |s / p| <= |s|), so one binade stands for every
// sum above the guard. Built from the
// repository root (the kernels' object file, libcollx.so for the names in messages):
//   o=build/lib/libcollx_internal.a.p; g++ -O2 -std=c++20 -Ilib -Iinclude \
//     docs/cpu-runs/2026-11-28f/float-quotient/scan32.cc $o/reduce_reduce.cc.o \
//     $o/api_status.cc.o -Lbuild/lib -lcollx -Wl,-rpath,$PWD/build/lib -o /tmp/scan32
// and run as /tmp/scan32 FIRST LAST.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "reduce/reduce.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int first = std::atoi(argv[1]), last = std::atoi(argv[2]);
  const size_t n = size_t(1) << 23;
  std::vector<float> s(n), v(n), want(n);
  for (size_t i = 0; i < n; ++i) s[i] = std::bit_cast<float>(uint32_t(0x3f800000u + i));
  for (collx::Simd simd : {collx::Simd::kAvx2, collx::Simd::kAvx512}) {
    if (static_cast<int>(simd) > static_cast<int>(collx::best_simd())) continue;
    collx::Reducer red;
    if (!collx::make_reducer(COLLX_FLOAT32, COLLX_AVG, &red, simd).ok()) return 2;
    size_t wrong_total = 0;
    for (int p = first; p <= last; ++p) {
      for (size_t i = 0; i < n; ++i) want[i] = s[i] / static_cast<float>(p);
      v = s;
      red.finalize(v.data(), n, p);
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) {
        wrong += std::bit_cast<uint32_t>(v[i]) != std::bit_cast<uint32_t>(want[i]);
      }
      if (wrong != 0) {
        std::printf("%s p=%d: %zu of %zu differ\n", collx::simd_name(simd), p, wrong, n);
      }
      wrong_total += wrong;
    }
    std::printf("%s: ranks %d to %d, %zu sums each: %zu differ\n", collx::simd_name(simd), first,
                last, n, wrong_total);
  }
  return 0;
}
