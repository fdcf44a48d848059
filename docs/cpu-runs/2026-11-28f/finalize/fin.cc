// avg's division pass alone (Reducer::finalize, 3 ranks), at the best vector level, on sums
// uniform in [-1, 1) or ("tiny") on the byte pattern (i * 37 + 11) & 63, whose floats include
// subnormal and near-subnormal values (every bfloat16 of it is subnormal): per size, the
// median of 7 timings of a copy of fresh sums plus the pass, less the copy alone. Built from
// the repository root against a build's kernels, e.g.
//   o=build/lib/libcollx_internal.a.p; g++ -O2 -std=c++20 -Ilib -Iinclude FILE.cc \
//     $o/reduce_reduce.cc.o $o/api_status.cc.o -Lbuild/lib -lcollx -Wl,-rpath,$PWD/build/lib
// and run as ./a.out [tiny].
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cstring>
#include <string>
#include <algorithm>
#include "reduce/reduce.h"
#include "reduce/half.h"
int main(int argc, char** argv) {
  const bool tiny = argc > 1 && std::string(argv[1]) == "tiny";
  const collx_dtype_t types[] = {COLLX_BFLOAT16, COLLX_FLOAT16, COLLX_FLOAT32, COLLX_FLOAT64};
  const char* names[] = {"bf16", "f16", "f32", "f64"};
  const size_t sizes[] = {4096, 262144, 4194304};
  for (int t = 0; t < 4; ++t) {
    collx::Reducer red;
    if (!collx::make_reducer(types[t], COLLX_AVG, &red).ok()) return 1;
    for (size_t bytes : sizes) {
      const size_t n = bytes / red.elem_size;
      std::vector<unsigned char> buf(bytes);
      std::vector<unsigned char> src(bytes);
      uint64_t x = 88172645463325252ull;
      for (size_t i = 0; i < bytes && tiny; ++i) src[i] = (i * 37 + 11) & 0x3f;
      for (size_t i = 0; i < n && !tiny; ++i) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        const double v = (double((x >> 11) & ((1ull << 40) - 1)) / double(1ull << 40)) * 2 - 1;
        switch (t) {
          case 0: { auto h = collx::to_bfloat16(float(v)); memcpy(&src[i * 2], &h, 2); break; }
          case 1: { auto h = collx::to_float16(float(v)); memcpy(&src[i * 2], &h, 2); break; }
          case 2: { float f = float(v); memcpy(&src[i * 4], &f, 4); break; }
          default: memcpy(&src[i * 8], &v, 8);
        }
      }
      const int reps = std::max<size_t>(1, (size_t(1) << 28) / bytes);
      std::vector<double> med;
      for (int k = 0; k < 7; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) {
          memcpy(buf.data(), src.data(), bytes);
          red.finalize(buf.data(), n, 3);
        }
        auto t1 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) {
          memcpy(buf.data(), src.data(), bytes);
          asm volatile("" ::: "memory");
        }
        auto t2 = std::chrono::steady_clock::now();
        med.push_back(std::chrono::duration<double>((t1 - t0) - (t2 - t1)).count() / reps * 1e6);
      }
      std::sort(med.begin(), med.end());
      std::printf("%s %zu B: %.3f us (%.1f GB/s)\n", names[t], bytes, med[3], bytes / med[3] / 1e3);
    }
  }
}
