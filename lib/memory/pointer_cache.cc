#include "memory/pointer_cache.h"

#include <new>

namespace collx {

const char* mem_kind_name(MemKind k) {
  switch (k) {
    case MemKind::kHost: return "host";
    case MemKind::kDevice: return "CUDA device";
    case MemKind::kManaged: return "CUDA managed";
  }
  return "unknown";
}

namespace {

bool holds(const MemRange& r, uintptr_t p, size_t bytes) {
  return p >= r.base && p - r.base <= r.size && bytes <= r.size - (p - r.base);
}

}  // namespace

MemRange PointerCache::classify(const void* ptr, size_t bytes, bool* straddles) {
  *straddles = false;
  if (query_ == nullptr || ptr == nullptr) return MemRange{};
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  uintptr_t base = 0;
  if (MemRange* r = ranges_.floor(p, &base); r != nullptr && holds(*r, p, bytes)) {
    if (query_->buffer_id(ptr) == r->buffer_id) {
      ++stats_.hits;
      return *r;
    }
    ++stats_.stale;  // freed, and something else allocated there since
    ranges_.erase(base, drop);
  }
  ++stats_.misses;
  MemRange r;
  if (!query_->describe(ptr, &r)) {
    // Host memory, unless its last byte is in an allocation the driver knows.
    MemRange last;
    *straddles = bytes > 1 && query_->describe(static_cast<const char*>(ptr) + bytes - 1, &last);
    return MemRange{};
  }
  if (!holds(r, p, bytes)) {
    *straddles = true;
    return MemRange{};
  }
  try {
    ranges_.put(r.base, r, drop);
  } catch (const std::bad_alloc&) {
    // No memory for the entry: the range is right all the same, only not kept (the next call
    // asks the driver again). Failing here would leave this rank out of a collective that
    // its peers enter (a device path's vote), to their deadline.
  }
  return r;
}

}  // namespace collx
