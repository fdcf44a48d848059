// GPU reduction kernels against the CPU kernels, bitwise: every dtype x op, 1/2/3/8 inputs,
// counts from 0 to 2^20+3, 16-byte-aligned and unaligned buffers (all at one offset from a
// 16-byte boundary, or inputs at different ones), in place and not, random inputs (one set per
// dtype, count and offsets), the output poisoned first and the bytes before its start and past
// its end checked untouched.
// NaN and infinity are checked for min and max (selections, so payloads survive); sum and
// prod of NaN give the GPU's canonical NaN, not x86's, and are not compared bitwise.
// Exit code 77 (a skip, for meson) where no CUDA device is present.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "common/cuda_ok.h"
#include "cuda/reduce.h"
#include "reduce/half.h"
#include "reduce/reduce.h"

namespace {

int failures = 0, checks = 0;

// Random values whose sums and products of up to 8 stay finite in every dtype.
void fill(collx_dtype_t dt, void* buf, size_t count, std::mt19937_64& rng, bool specials) {
  const size_t es = collx_dtype_size(dt);
  auto* b = static_cast<uint8_t*>(buf);
  std::uniform_real_distribution<float> small(-2.0f, 2.0f);
  const float special[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f};
  for (size_t i = 0; i < count; ++i) {
    float f = small(rng);
    if (specials && rng() % 4 == 0) f = special[rng() % 6];
    switch (dt) {
      case COLLX_FLOAT16: { const auto h = collx::to_float16(f); std::memcpy(b + i * es, &h, es); break; }
      case COLLX_BFLOAT16: { const auto h = collx::to_bfloat16(f); std::memcpy(b + i * es, &h, es); break; }
      case COLLX_FLOAT32: std::memcpy(b + i * es, &f, es); break;
      case COLLX_FLOAT64: { const double d = f; std::memcpy(b + i * es, &d, es); break; }
      default: { const uint64_t r = rng(); std::memcpy(b + i * es, &r, es); break; }  // wraparound
    }
  }
}

// kMaxInputs random inputs of `count` elements on the host, and each on the device at its
// offset (`mixed`: input k k elements further on, at its own distance from a 16-byte
// boundary). Every op and input count of a dtype reads the same ones: making and uploading
// them took most of this test's time when each case made its own.
struct Inputs {
  std::vector<std::vector<uint8_t>> host;
  std::vector<uint8_t*> alloc;
  const void* dev[collx::cuda::kMaxInputs];

  Inputs(collx_dtype_t dt, size_t count, size_t offset, bool mixed, bool specials,
         std::mt19937_64& rng)
      : host(collx::cuda::kMaxInputs), alloc(collx::cuda::kMaxInputs) {
    const size_t es = collx_dtype_size(dt), bytes = count * es;
    for (int k = 0; k < collx::cuda::kMaxInputs; ++k) {
      host[k].resize(bytes + 1);
      fill(dt, host[k].data(), count, rng, specials);
      const size_t at = offset + (mixed ? static_cast<size_t>(k) * es : 0);
      CUDA_OK(cudaMalloc(&alloc[k], at + bytes + 1));
      CUDA_OK(cudaMemcpy(alloc[k] + at, host[k].data(), bytes, cudaMemcpyHostToDevice));
      dev[k] = alloc[k] + at;
    }
  }
  ~Inputs() {
    for (auto* p : alloc) CUDA_OK(cudaFree(p));
  }
  Inputs(const Inputs&) = delete;
  Inputs& operator=(const Inputs&) = delete;
};

// The kernel's output for the first n inputs against `want`, bitwise, with the bytes around it
// untouched.
void compare(collx_dtype_t dt, collx_op_t op, int n, size_t count, const Inputs& in,
             const std::vector<uint8_t>& want, size_t offset, bool mixed, bool in_place,
             bool specials) {
  const size_t bytes = count * collx_dtype_size(dt), guard = 64;
  const void* dev_in[collx::cuda::kMaxInputs];
  for (int k = 0; k < n; ++k) dev_in[k] = in.dev[k];
  uint8_t* out = nullptr;
  CUDA_OK(cudaMalloc(&out, bytes + offset + guard));
  CUDA_OK(cudaMemset(out, 0xa5, bytes + offset + guard));  // poison, and the guards around it
  if (in_place) CUDA_OK(cudaMemcpy(out + offset, in.host[0].data(), bytes, cudaMemcpyHostToDevice));
  if (in_place) dev_in[0] = out + offset;
  const int err = collx::cuda::reduce(out + offset, dev_in, n, count, dt, op, n, nullptr);
  CUDA_OK(static_cast<cudaError_t>(err));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<uint8_t> got(offset + bytes + guard);
  CUDA_OK(cudaMemcpy(got.data(), out, got.size(), cudaMemcpyDeviceToHost));
  ++checks;
  bool ok = std::memcmp(got.data() + offset, want.data(), bytes) == 0;
  for (size_t i = 0; i < got.size(); ++i) ok = ok && (i - offset < bytes || got[i] == 0xa5);
  if (!ok) {
    ++failures;
    if (failures <= 20) {
      std::fprintf(stderr, "FAIL %s %s: %d inputs, count %zu, offset %zu%s, %s%s\n",
                   collx_dtype_name(dt), collx_op_name(op), n, count, offset,
                   mixed ? " (inputs at different ones)" : "",
                   in_place ? "in place" : "out of place", specials ? ", NaN/inf" : "");
    }
  }
  CUDA_OK(cudaFree(out));
}

// The first n inputs reduced into an output at `offset` from a fresh allocation, out of place
// and, with `in_place_too`, in place (the output holds input 0 first, and is the kernel's first
// input).
void run_case(collx_dtype_t dt, collx_op_t op, const collx::Reducer& red, int n, size_t count,
              const Inputs& in, size_t offset, bool mixed, bool in_place_too, bool specials) {
  // The CPU reference, left to right as the GPU does it.
  std::vector<uint8_t> want = in.host.front();
  for (int k = 1; k < n; ++k) red(want.data(), want.data(), in.host[k].data(), count);
  if (red.finalize != nullptr) red.finalize(want.data(), count, n);
  compare(dt, op, n, count, in, want, offset, mixed, false, specials);
  if (in_place_too) compare(dt, op, n, count, in, want, offset, mixed, true, specials);
}

}  // namespace

// cuda_reduce_test [max_count]: counts above max_count are left out (compute-sanitizer runs
// the small ones; its instrumentation makes the 2^20 cases take minutes).
int main(int argc, char** argv) {
  const size_t max_count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : SIZE_MAX;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device here; the GPU kernels were compiled, not run\n");
    return 77;
  }
  std::mt19937_64 rng(12345);
  const size_t counts[] = {0, 1, 7, 18, 1000, (size_t{1} << 20) + 3};
  for (int d = 0; d < COLLX_DTYPE_COUNT; ++d) {
    const auto dt = static_cast<collx_dtype_t>(d);
    const size_t es = collx_dtype_size(dt);
    const bool floating = dt == COLLX_FLOAT16 || dt == COLLX_BFLOAT16 ||
                          dt == COLLX_FLOAT32 || dt == COLLX_FLOAT64;
    // Each op with a meaning for dt; a pair without one is refused on the GPU too.
    std::vector<std::pair<collx_op_t, collx::Reducer>> ops;
    for (int o = 0; o < COLLX_OP_COUNT; ++o) {
      const auto op = static_cast<collx_op_t>(o);
      collx::Reducer red;
      if (collx::make_reducer(dt, op, &red).ok()) {
        ops.emplace_back(op, red);
        continue;
      }
      const void* in[1] = {nullptr};
      ++checks;
      if (collx::cuda::reduce(nullptr, in, 1, 1, dt, op, 1, nullptr) != cudaErrorInvalidValue) {
        ++failures;
        std::fprintf(stderr, "FAIL %s %s accepted\n", collx_dtype_name(dt), collx_op_name(op));
      }
    }
    for (size_t count : counts) {
      if (count > max_count) continue;
      // Offsets: aligned; one element (the packed kernel after a scalar head where the element
      // is under 16 bytes); one element with the inputs at different offsets (the scalar
      // kernel alone, whose code the other shapes run too: not at 2^20).
      for (int shape = 0; shape < (count > 1000 ? 2 : 3); ++shape) {
        const size_t offset = shape == 0 ? 0 : es;
        const Inputs in(dt, count, offset, shape == 2, false, rng);
        for (const auto& [op, red] : ops) {
          for (int n : {1, 2, 3, 8}) {
            run_case(dt, op, red, n, count, in, offset, shape == 2, true, false);
          }
        }
      }
    }
    if (floating) {
      const Inputs in(dt, 1000, 0, false, true, rng);
      for (const auto& [op, red] : ops) {
        if (op != COLLX_MIN && op != COLLX_MAX) continue;
        for (int n : {1, 2, 3, 8}) run_case(dt, op, red, n, 1000, in, 0, false, false, true);
      }
    }
  }
  std::printf("%d of %d GPU kernel checks failed\n", failures, checks);
  return failures == 0 ? 0 : 1;
}
