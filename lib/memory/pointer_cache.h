// Pointer cache: what kind of memory a user buffer is (host, CUDA device, CUDA managed), asked
// of the CUDA driver once per allocation, not once per call (the CCGrid'19 pointer cache).
//
// An entry is the driver's description of a whole allocation: range start and size, device,
// and the driver's buffer id. A lookup finds the cached range that holds the address, then
// checks that the allocation there still has the cached buffer id (one cheap driver query), so
// memory freed and allocated again at the same address is never taken for the old allocation.
// Host memory is not cached: the driver knows no range or id for it, and a process with no
// CUDA driver (MemoryQuery null) classifies everything as host without asking anyone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memory/lru_map.h"

namespace collx {

enum class MemKind : uint8_t { kHost, kDevice, kManaged };

const char* mem_kind_name(MemKind k);

struct MemRange {
  MemKind kind = MemKind::kHost;
  uintptr_t base = 0;  // allocation start (0 for host memory)
  size_t size = 0;
  int device = -1;
  uint64_t buffer_id = 0;  // the driver's id of the allocation, unique within the process
};

// The driver's answers. An interface so that the cache runs, and is tested, without a GPU.
class MemoryQuery {
 public:
  virtual ~MemoryQuery() = default;
  // The allocation that holds p; false if the driver does not know p (host memory).
  virtual bool describe(const void* p, MemRange* out) = 0;
  // The buffer id of the allocation that holds p now (0 if none).
  virtual uint64_t buffer_id(const void* p) = 0;
};

class PointerCache {
 public:
  // `query` may be null (no CUDA driver): then everything is host memory.
  explicit PointerCache(MemoryQuery* query, size_t capacity = 1024)
      : query_(query), ranges_(capacity) {}

  // What memory [p, p + bytes) is. A range that is not wholly inside one allocation the
  // driver knows is reported as host memory only if the driver knows no part of it either:
  // out->kind == kHost with *straddles set otherwise, for the caller to reject.
  MemRange classify(const void* p, size_t bytes, bool* straddles);

  struct Stats {
    uint64_t hits = 0;     // found and still valid
    uint64_t misses = 0;   // asked the driver for the whole description
    uint64_t stale = 0;    // found, but the allocation there had changed (counted in misses)
  };
  const Stats& stats() const { return stats_; }
  size_t size() const { return ranges_.size(); }

 private:
  static void drop(uintptr_t, MemRange&) {}

  MemoryQuery* query_;
  LruMap<uintptr_t, MemRange> ranges_;  // by allocation start
  Stats stats_;
};

}  // namespace collx
