// COLLX_PROFILE: per communicator, per power-of-two message-size bucket, how many allreduces,
// how long they took, how many bytes, which algorithms (and which hierarchical ran between
// nodes). At communicator destruction the ranks combine their buckets and rank 0 prints one
// table (and, with COLLX_PROFILE_FILE, writes the same as JSON): the per-size view that shows
// where a job's allreduce time goes.
// Off, it costs the caller one predictable branch; on, two clock reads and a few adds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "select/select.h"

namespace collx {

struct ProfileBucket {
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t min_ns = INT64_MAX;
  int64_t max_ns = 0;
  int64_t bytes = 0;
  int64_t algos = 0;   // bit i: Algo i was used
  int64_t across = 0;  // bit i: hierarchical ran Algo i between nodes
};

// The caches' counters, summed over the ranks (at destruction, with the buckets).
struct CacheCounts {
  int64_t pointer_hits = 0, pointer_misses = 0;             // pointer cache (device buffers)
  int64_t ipc_hits = 0, ipc_opens = 0, ipc_closes = 0;      // IPC registration cache
  int64_t ipc_exports = 0;                                  // own allocations exported
};

class Profile {
 public:
  static constexpr int kBuckets = 48;  // bucket b: [2^(b-1), 2^b) bytes; bucket 0: 0 bytes

  static int bucket_of(size_t bytes) {
    const int b = bytes == 0 ? 0 : 64 - __builtin_clzll(bytes);
    return b < kBuckets ? b : kBuckets - 1;
  }
  void record(size_t bytes, Algo algo, int64_t across, std::chrono::steady_clock::duration t) {
    ProfileBucket& b = buckets_[bucket_of(bytes)];
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t).count();
    b.calls += 1;
    b.total_ns += ns;
    b.min_ns = ns < b.min_ns ? ns : b.min_ns;
    b.max_ns = ns > b.max_ns ? ns : b.max_ns;
    b.bytes += static_cast<int64_t>(bytes);
    b.algos |= int64_t{1} << static_cast<int>(algo);
    b.across |= across;
  }
  ProfileBucket* buckets() { return buckets_; }
  CacheCounts caches;

  // The table printed by rank 0 for `ranks` ranks (buckets already combined over ranks, with
  // times summed over ranks: the mean is per rank and call).
  std::string table(int ranks) const;
  std::string json(int ranks) const;

 private:
  ProfileBucket buckets_[kBuckets];
};

}  // namespace collx
