// float16 and bfloat16 <-> float, round-to-nearest-even. NaNs come out quiet with their sign
// and top payload bits, exactly as x86's F16C instructions do, so the scalar and the F16C
// kernels give identical bits. Host and device code (the CUDA kernels use the same functions,
// so host and GPU reductions give the same bits).
#pragma once

#include <bit>
#include <cstdint>

#if defined(__CUDACC__)
#define COLLX_HD __host__ __device__
#else
#define COLLX_HD
#endif

namespace collx {

COLLX_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}
COLLX_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

COLLX_HD inline float to_float(Float16 h) {
  // F. Giesen's magic-number conversion: exact for normals, subnormals, inf and NaN.
  uint32_t u = static_cast<uint32_t>(h.bits & 0x7fffu) << 13;
  const uint32_t exp = u & (0x7c00u << 13);
  u += (127u - 15u) << 23;
  if (exp == (0x7c00u << 13)) {
    u += (128u - 16u) << 23;  // inf / NaN; a NaN comes out quiet (as F16C's vcvtph2ps)
    if (u & 0x7fffffu) u |= 0x400000u;
  } else if (exp == 0) {
    u += 1u << 23;  // zero / subnormal: renormalise through a float subtraction
    u = float_bits(bits_float(u) - bits_float(113u << 23));
  }
  u |= static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  return bits_float(u);
}

COLLX_HD inline Float16 to_float16(float value) {
  uint32_t f = float_bits(value);
  const uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint32_t o;
  if (f >= ((127u + 16u) << 23)) {
    // NaN -> quiet NaN keeping the top payload bits (as F16C's vcvtps2ph does), else inf.
    o = f > (255u << 23) ? (0x7e00u | ((f >> 13) & 0x1ffu)) : 0x7c00u;
  } else if (f < (113u << 23)) {
    // Subnormal or zero: let the FPU round (RNE) by adding a magic number.
    const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    o = float_bits(bits_float(f) + bits_float(magic)) - magic;
  } else {
    const uint32_t mant_odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu + mant_odd;
    o = f >> 13;
  }
  return Float16{static_cast<uint16_t>(o | (sign >> 16))};
}

COLLX_HD inline float to_float(BFloat16 h) { return bits_float(static_cast<uint32_t>(h.bits) << 16); }

// Branch-free so that loops over it vectorise: a NaN is quieted (sign and top payload kept).
COLLX_HD inline BFloat16 to_bfloat16(float value) {
  const uint32_t f = float_bits(value);
  const uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (f >> 16) | 0x40u;
  return BFloat16{static_cast<uint16_t>((f & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded)};
}

}  // namespace collx
