#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "reduce/ops.h"
using namespace collx;
// s / p through the reciprocal and one FMA correction (Markstein), non-finite s multiplied.
static float corrected(float s, float p, float c) {
  float q = s * c;
  if (!std::isfinite(s)) return q;
  float r = std::fma(-q, p, s);
  return r == 0 ? q : std::fma(r, c, q);
}
template <typename H> void scan(const char* name, int pmax) {
  int first = 0, bad = 0, first32 = 0;
  for (int p = 1; p <= pmax; ++p) {
    const float fp = static_cast<float>(p), c = 1.0f / fp;
    bool b = false, b32 = false;
    for (unsigned v = 0; v < 65536; ++v) {
      H h; uint16_t bits = static_cast<uint16_t>(v); std::memcpy(&h, &bits, 2);
      float x = to_float(h);
      float q = x / fp, k = corrected(x, fp, c);
      H d = round_to<H>(q), m = round_to<H>(k);
      if (std::memcmp(&d, &m, 2) != 0) { if (!b && p < 3) std::printf("p %d v %04x q %a k %a\n", p, v, q, k); b = true; }
      if (std::memcmp(&q, &k, 4) != 0 && !std::isnan(q)) b32 = true;
    }
    if (b) { ++bad; if (!first) first = p; }
    if (b32 && !first32) first32 = p;
  }
  std::printf("%s: first bad p %d, bad ps %d of %d; first p where the float quotient differs %d\n", name, first, bad, pmax, first32);
}
int main(int argc, char** argv) {
  int pmax = atoi(argv[1]);
  scan<Float16>("float16", pmax);
  scan<BFloat16>("bfloat16", pmax);
}
