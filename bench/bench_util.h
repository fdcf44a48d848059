// Helpers of the MPI benchmarks (collx_osu, collx_tune, cuda_mpi_bench): names on the command
// line, medians, stopping the job where libcollx failed.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "collx/collx.h"

namespace collx::bench {

// Says which libcollx call failed, with its status and message, and stops the MPI job.
[[noreturn]] inline void fail(const char* program, const char* what, collx_status_t st) {
  std::fprintf(stderr, "%s: %s: %s: %s\n", program, what, collx_strerror(st), collx_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// Writes every cache line of `bytes` bytes at `p` again, with the value it holds (--rewrite):
// as a program that computes its input before each call, so that a peer that read the input
// last call finds it freshly written, and this core takes the lines back from the peer's cache.
inline void rewrite_lines(uint8_t* p, size_t bytes) {
  for (size_t b = 0; b < bytes; b += 64) {
    volatile uint8_t* line = p + b;
    *line = *line;
  }
}

// A dtype or op by its libcollx name ("float32", "sum"); false for an unknown name.
inline bool parse_dtype(const char* s, collx_dtype_t* out) {
  for (int d = 0; d < COLLX_DTYPE_COUNT; ++d) {
    if (!std::strcmp(s, collx_dtype_name(static_cast<collx_dtype_t>(d)))) {
      *out = static_cast<collx_dtype_t>(d);
      return true;
    }
  }
  return false;
}

inline bool parse_op(const char* s, collx_op_t* out) {
  for (int o = 0; o < COLLX_OP_COUNT; ++o) {
    if (!std::strcmp(s, collx_op_name(static_cast<collx_op_t>(o)))) {
      *out = static_cast<collx_op_t>(o);
      return true;
    }
  }
  return false;
}

// The median of `v` (the mean of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace collx::bench
