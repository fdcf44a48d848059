#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "reduce/ops.h"
using namespace collx;
template <typename H> int first_bad(int pmax, int* bad_count) {
  int first = 0;
  *bad_count = 0;
  for (int p = 1; p <= pmax; ++p) {
    const float c = 1.0f / static_cast<float>(p);
    for (unsigned v = 0; v < 65536; ++v) {
      H h; uint16_t b = static_cast<uint16_t>(v); std::memcpy(&h, &b, 2);
      H d = round_to<H>(to_float(h) / static_cast<float>(p));
      H m = round_to<H>(to_float(h) * c);
      if (std::memcmp(&d, &m, 2) != 0) { if (!first) first = p; ++*bad_count; break; }
    }
  }
  return first;
}
int main(int argc, char** argv) {
  int pmax = atoi(argv[1]), n;
  int f = first_bad<Float16>(pmax, &n); std::printf("float16: first bad p %d, bad ps %d of %d\n", f, n, pmax);
  f = first_bad<BFloat16>(pmax, &n); std::printf("bfloat16: first bad p %d, bad ps %d of %d\n", f, n, pmax);
}
