// A fake CUDA driver for the memory layer's tests: it calls the ranges registered with alloc()
// CUDA memory (the addresses may be invented, or ordinary memory that the staging tests then
// treat as device memory), and counts the questions it is asked.
#pragma once

#include <cstdint>
#include <map>

#include "memory/pointer_cache.h"

namespace collx::test {

// A driver that knows the allocations in `allocs` (by start address), counting its calls.
struct FakeDriver : MemoryQuery {
  std::map<uintptr_t, MemRange> allocs;
  uint64_t next_id = 1;
  int describes = 0, id_queries = 0;

  void alloc(uintptr_t base, size_t size, MemKind kind = MemKind::kDevice, int device = 0) {
    allocs[base] = MemRange{kind, base, size, device, next_id++};
  }
  // Ordinary memory that the tests treat as memory of CUDA device `device`.
  void device_memory(const void* p, size_t size, int device) {
    alloc(reinterpret_cast<uintptr_t>(p), size, MemKind::kDevice, device);
  }
  const MemRange* find(const void* p) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = allocs.upper_bound(a);
    if (it == allocs.begin()) return nullptr;
    --it;
    return a < it->first + it->second.size ? &it->second : nullptr;
  }
  bool describe(const void* p, MemRange* out) override {
    ++describes;
    const MemRange* r = find(p);
    if (r != nullptr) *out = *r;
    return r != nullptr;
  }
  uint64_t buffer_id(const void* p) override {
    ++id_queries;
    const MemRange* r = find(p);
    return r != nullptr ? r->buffer_id : 0;
  }
};

}  // namespace collx::test
