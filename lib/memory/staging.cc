#include "memory/staging.h"

#include <algorithm>
#include <cstdint>

namespace collx {

size_t staging_chunk_count(size_t chunk_bytes, size_t elem_size) {
  return std::max<size_t>(1, chunk_bytes / elem_size);
}

size_t staging_chunks(size_t count, size_t chunk_count) {
  return (count + chunk_count - 1) / chunk_count;
}

Status staged_allreduce(DeviceCopier& copier, const void* send, void* recv, size_t count,
                        size_t elem_size, size_t chunk_count, const ChunkReduce& reduce) {
  constexpr size_t kSlots = DeviceCopier::kSlots;
  const size_t chunks = staging_chunks(count, chunk_count);
  if (chunks == 0) return Status();
  COLLX_TRY(copier.reserve(std::min(count, chunk_count) * elem_size));
  const auto* src = static_cast<const uint8_t*>(send);
  auto* dst = static_cast<uint8_t*>(recv);
  auto elems = [&](size_t i) { return std::min(chunk_count, count - i * chunk_count); };
  auto copy_in = [&](size_t i) {
    return copier.copy_in(static_cast<int>(i % kSlots), src + i * chunk_count * elem_size,
                          elems(i) * elem_size);
  };
  Status st = copy_in(0);
  for (size_t i = 0; st.ok() && i < chunks; ++i) {
    const int s = static_cast<int>(i % kSlots);
    if (i + 1 < chunks) {
      const int next = static_cast<int>((i + 1) % kSlots);
      if (i + 1 >= kSlots) st = copier.wait_out(next);  // chunk i+1-kSlots is out of the slot
      if (st.ok()) st = copy_in(i + 1);
    }
    if (st.ok()) st = copier.wait_in(s);
    if (st.ok()) st = reduce(copier.slot(s), elems(i), i);
    if (st.ok()) st = copier.copy_out(dst + i * chunk_count * elem_size, s, elems(i) * elem_size);
  }
  // Whatever happened, nothing queued may still touch the user's buffers on return.
  for (size_t i = chunks > kSlots ? chunks - kSlots : 0; i < chunks; ++i) {
    Status w = copier.wait_out(static_cast<int>(i % kSlots));
    Status v = copier.wait_in(static_cast<int>(i % kSlots));
    if (st.ok()) st = !w.ok() ? w : v;
  }
  return st;
}

}  // namespace collx
