// IPC registration cache: peers' GPU allocations opened in this process (cudaIpcOpenMemHandle
// costs ~100 us and maps memory; a stale mapping gives wrong answers).
//
// Keyed by (peer rank, the peer's exported handle) and validated by the buffer id the peer
// sends with the handle: when the peer has freed the allocation and made a new one that comes
// with the same handle bytes, the id differs, and the old mapping is closed and the new one
// opened. Bounded: when full, the least recently used mapping is closed. Repeated calls on the
// same buffers open nothing.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>

#include "api/status.h"
#include "memory/lru_map.h"

namespace collx {

// cudaIpcMemHandle_t: 64 opaque bytes.
struct IpcHandle {
  std::array<uint8_t, 64> bytes{};
  auto operator<=>(const IpcHandle&) const = default;
};

// Opens and closes peers' handles. An interface so that the cache runs, and is tested,
// without a GPU.
class IpcOpener {
 public:
  virtual ~IpcOpener() = default;
  virtual Status open(int peer, const IpcHandle& h, void** base) = 0;
  virtual void close(void* base) = 0;
};

class IpcCache {
 public:
  IpcCache(IpcOpener* opener, size_t capacity) : opener_(opener), maps_(capacity) {}
  ~IpcCache();
  IpcCache(const IpcCache&) = delete;
  IpcCache& operator=(const IpcCache&) = delete;

  // This process's address of the start of `peer`'s allocation exported as `h`, whose buffer
  // id (in the peer's process) is `buffer_id`: from the cache, or opened now.
  Status map(int peer, const IpcHandle& h, uint64_t buffer_id, void** base);

  struct Stats {
    uint64_t hits = 0;
    uint64_t opens = 0;
    uint64_t closes = 0;  // stale, evicted, or at destruction
  };
  const Stats& stats() const { return stats_; }
  size_t size() const { return maps_.size(); }

 private:
  struct Key {
    int peer;
    IpcHandle handle;
    auto operator<=>(const Key&) const = default;
  };
  struct Mapping {
    void* base;
    uint64_t buffer_id;
  };
  void close(const Key&, Mapping& m);

  IpcOpener* opener_;
  LruMap<Key, Mapping> maps_;
  Stats stats_;
};

}  // namespace collx
