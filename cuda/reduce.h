// GPU reduction kernels for every dtype x op, callable from plain C++ (no CUDA types here).
//
// dst = in[0] op in[1] op ... op in[n-1], element by element, left to right: the expression of
// the CPU kernels (lib/reduce/ops.h, half.h: float16/bfloat16 widened to float and rounded back
// to nearest-even after every step), so the GPU and the host give bitwise the same results and
// every rank of a one-shot gets the same bits. Many inputs are read in one pass (one-shot
// over CUDA IPC). Each thread moves 16 bytes of every input when all pointers are 16-byte
// aligned; a scalar kernel does the rest.
#pragma once

#include <cstddef>

#include "collx/collx.h"

namespace collx::cuda {

constexpr int kMaxInputs = 8;

// Launches on `stream` (a cudaStream_t; null: the default stream) and returns at once. dst may
// be in[0] (never a partial overlap). avg sums and then divides by `ranks`. Returns a
// cudaError_t: cudaErrorInvalidValue for n outside 1..kMaxInputs or a pair with no meaning
// (make_reducer's rules), else the launch's status.
int reduce(void* dst, const void* const* in, int n, size_t count, collx_dtype_t dtype,
           collx_op_t op, int ranks, void* stream);

// The CUDA runtime's text for a cudaError_t.
const char* error_string(int cuda_error);

}  // namespace collx::cuda
