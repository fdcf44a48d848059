// IPC registration cache: peers' GPU allocations opened in this process (cudaIpcOpenMemHandle
// costs ~100 us and maps memory; a stale mapping gives wrong answers).
//
// Keyed by (peer rank, the allocation's start in the peer's address space) and validated by
// the buffer id the peer sends with the handle: when the peer has freed the allocation and
// made a new one at the same address, the id differs, and the old mapping is closed and the
// new one opened. Before an open, every mapping of that peer whose range overlaps the new
// allocation is closed: the peer must have freed those, and CUDA refuses to open an allocation
// at addresses a mapping still holds (CUDA_ERROR_ALREADY_MAPPED, seen on an H100 when a peer
// reallocated at the same address under a new handle). Bounded: when full, the least recently
// used mapping is closed. Repeated calls on the same buffers open nothing.
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

// A device buffer as its owner exports it to the peers: the IPC handle of its allocation, the
// allocation's start and size in the owner's address space, the buffer's offset in it, and the
// allocation's buffer id (pointer cache) in the owner's process.
struct IpcExport {
  IpcHandle handle;
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
  uint64_t buffer_id = 0;
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

  // This process's address of the start of `peer`'s allocation exported as `x`: from the
  // cache, or opened now. No memory for its entry is COLLX_ERR_NO_MEMORY (nothing left open).
  Status map(int peer, const IpcExport& x, void** base);

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
    uint64_t base;  // in the peer's address space
    auto operator<=>(const Key&) const = default;
  };
  struct Mapping {
    void* base;  // in this process
    uint64_t size;
    uint64_t buffer_id;
    IpcHandle handle;
  };
  void close(const Key&, Mapping& m);

  IpcOpener* opener_;
  LruMap<Key, Mapping> maps_;
  Stats stats_;
};

}  // namespace collx
