// The C++ type of each dtype, for code that is written once per type: with_dtype(d, f) calls
// f(T{}) with T the type of d (Float16/BFloat16 for the 16-bit floating types). Used by the CPU
// kernels' table, the GPU kernels' dispatch and the tests' patterns.
#pragma once

#include <cstdint>

#include "collx/collx.h"
#include "reduce/half.h"

namespace collx {

// False (and f not called) for a value outside collx_dtype_t.
template <typename F>
bool with_dtype(collx_dtype_t d, F&& f) {
  switch (d) {
    case COLLX_INT8: f(int8_t{}); return true;
    case COLLX_UINT8: f(uint8_t{}); return true;
    case COLLX_INT16: f(int16_t{}); return true;
    case COLLX_UINT16: f(uint16_t{}); return true;
    case COLLX_INT32: f(int32_t{}); return true;
    case COLLX_UINT32: f(uint32_t{}); return true;
    case COLLX_INT64: f(int64_t{}); return true;
    case COLLX_UINT64: f(uint64_t{}); return true;
    case COLLX_FLOAT16: f(Float16{}); return true;
    case COLLX_BFLOAT16: f(BFloat16{}); return true;
    case COLLX_FLOAT32: f(float{}); return true;
    case COLLX_FLOAT64: f(double{}); return true;
    default: return false;
  }
}

}  // namespace collx
