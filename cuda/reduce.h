// GPU reduction kernels for every dtype x op, callable from plain C++ (no CUDA types here).
//
// dst = in[0] op in[1] op ... op in[n-1], element by element, left to right: the expression of
// the CPU kernels (lib/reduce/ops.h, half.h: float16/bfloat16 widened to float and rounded back
// to nearest-even after every step), so the GPU and the host give bitwise the same results and
// every rank of a one-shot gets the same bits. Many inputs are read in one pass (one-shot
// over CUDA IPC). Each thread moves 16 bytes of every input where all pointers are 16-byte
// aligned; a scalar kernel does the elements before and after (ReduceSplit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collx/collx.h"

namespace collx::cuda {

constexpr int kMaxInputs = 8;

// Launches on `stream` (a cudaStream_t; null: the default stream) and returns at once. dst may
// be in[0] (never a partial overlap). avg divides each sum by `ranks` as it stores it. Returns a
// cudaError_t: cudaErrorInvalidValue for n outside 1..kMaxInputs or a pair with no meaning
// (make_reducer's rules), else the launch's status.
int reduce(void* dst, const void* const* in, int n, size_t count, collx_dtype_t dtype,
           collx_op_t op, int ranks, void* stream);

// How reduce() divides count elements of elem bytes: `head` elements before dst's first 16-byte
// boundary, then `packs` of 16 bytes, then `tail` elements. Packs need every input at dst's
// distance from a boundary, as when every rank's buffer lies at the same offset; where the
// distances differ, an element is not aligned to its size, or no pack fits, the scalar kernel
// does all (head = count).
struct ReduceSplit {
  size_t head, packs, tail;
};

inline ReduceSplit reduce_split(const void* dst, const void* const* in, int n, size_t count,
                                size_t elem) {
  const uintptr_t phase = reinterpret_cast<uintptr_t>(dst) % 16;
  bool same = elem > 0 && elem <= 16 && 16 % elem == 0 && phase % elem == 0;
  for (int k = 0; k < n && same; ++k) same = reinterpret_cast<uintptr_t>(in[k]) % 16 == phase;
  if (!same) return {count, 0, 0};
  const size_t head = phase == 0 ? 0 : (16 - phase) / elem, per = 16 / elem;
  const size_t packs = count > head ? (count - head) / per : 0;
  if (packs == 0) return {count, 0, 0};
  return {head, packs, count - head - packs * per};
}

// The CUDA runtime's text for a cudaError_t.
const char* error_string(int cuda_error);

}  // namespace collx::cuda
