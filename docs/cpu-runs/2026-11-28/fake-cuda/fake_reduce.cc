// collx::cuda::reduce on the host: the split of cuda/reduce.cu, each part reduced by the CPU
// kernels; checks that the parts cover the message and that packs start on 16-byte boundaries.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include "cuda/reduce.h"
#include "reduce/reduce.h"
long g_headed = 0, g_aligned = 0, g_scalar = 0;  // calls by their split
namespace collx::cuda {
int reduce(void* dst, const void* const* in, int n, size_t count, collx_dtype_t dtype,
           collx_op_t op, int ranks, void*) {
  if (n < 1 || n > kMaxInputs || ranks < 1) return 1;
  collx::Reducer red;
  if (!collx::make_reducer(dtype, op, &red).ok()) return 1;
  if (count == 0) return 0;
  const size_t es = red.elem_size;
  const ReduceSplit s = reduce_split(dst, in, n, count, es);
  if (s.head + s.packs * (16 / es) + s.tail != count) { std::puts("BAD SPLIT"); std::abort(); }
  auto part = [&](size_t from, size_t len, bool packed) {
    if (len == 0) return;
    auto* d = static_cast<uint8_t*>(dst) + from * es;
    if (packed && reinterpret_cast<uintptr_t>(d) % 16) { std::puts("BAD PACK"); std::abort(); }
    const auto at = [&](int k) { return static_cast<const uint8_t*>(in[k]) + from * es; };
    for (int k = 0; k < n && packed; ++k)
      if (reinterpret_cast<uintptr_t>(at(k)) % 16) { std::puts("BAD PACK IN"); std::abort(); }
    if (n == 1) { std::memmove(d, at(0), len * es); return; }
    red(d, at(0), at(1), len);
    for (int k = 2; k < n; ++k) red(d, d, at(k), len);
    // FAKE_BUG: a write before the output
    if (getenv("FAKE_BUG") && !packed && from == 0 && s.packs > 0) d[-1] ^= 1;
  };
  ++(s.packs == 0 ? g_scalar : s.head > 0 ? g_headed : g_aligned);
  part(0, s.head, false);
  part(s.head, s.packs * (16 / es), true);
  part(count - s.tail, s.tail, false);
  if (op == COLLX_AVG) red.finalize(dst, count, ranks);
  return 0;
}
const char* error_string(int) { return "fake"; }
}  // namespace collx::cuda
struct Report {
  ~Report() {
    std::printf("fake: calls packed from the start %ld, packed after a scalar head %ld, all "
                "scalar %ld\n", g_aligned, g_headed, g_scalar);
  }
} g_report;
