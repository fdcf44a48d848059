// How shm_two_shot writes the data that another rank reads next (its input copied into its
// slot, its reduced slice into the result area): with streaming (non-temporal) stores, which
// send the lines to memory, or with ordinary stores, which leave them in this core's caches.
//
// Which is faster depends on where the two cores are, and on this project's VM that changes
// while a job runs (docs/PERFORMANCE.md, "Which CPUs the two ranks get"): where the ranks'
// cores have separate L3 caches, the reader gets streamed lines from memory faster than it
// probes them out of the writer's cache (1 MiB in 73 us against 122 us); where they share an
// L3, ordinary stores leave the lines where the reader finds them (70 us against 158 us).
// hwloc cannot tell: a VM shows its own topology, not where the host put its vCPUs.
//
// So in "auto" mode each rank measures: per power-of-two message size it times its calls with
// either kind of store and uses the faster, trying the other again now and then so that it
// follows a change. A retry costs the difference between the two kinds, which ranges from a
// few percent to 5x on this project's VM (docs/PERFORMANCE.md), so the retries are spaced by
// it: every kRetry-th call while the slower kind costs at most twice the faster; when it costs
// R times as much, every (kRetry * 2^j)-th, for the least j with 2^j >= R - 1, with 2^j at
// most kMaxSpacing. So up to R = kMaxSpacing + 1 the retries cost at most 1/kRetry of the
// time. The choice is this rank's own (the reader does not care how the lines were written).
// The ranks' retries fall on the same calls, as far as their spacings agree: the schedule
// depends on the sequence of calls, which is the same on every rank, and a wider spacing's
// calls are among a narrower's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace collx {

enum class ShmStores { kAuto, kStreaming, kCached };

class StoreChoice {
 public:
  static constexpr int kRetry = 32;       // the other kind is tried every kRetry-th call,
  static constexpr int kMaxSpacing = 16;  // or less often, down to every kRetry * 16-th
  static constexpr int kSamples = 3;      // each kind's cost: the median of its last 3 calls

  explicit StoreChoice(ShmStores mode = ShmStores::kAuto) : mode_(mode) {}

  // Whether the next call of `bytes` streams its stores. Pair each call with record().
  bool streaming(size_t bytes);
  // The time the call took, in any unit that is the same for every call (clock ticks).
  void record(size_t bytes, uint64_t ticks);
  bool measuring() const { return mode_ == ShmStores::kAuto; }

  // A cheap clock for record(): the time-stamp counter on x86-64 (a few ns to read, where a
  // clock_gettime costs tens in this VM), nanoseconds elsewhere.
  static uint64_t ticks() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

 private:
  struct Kind {
    double cost[kSamples] = {};  // ticks per byte; 0: no sample yet
    int next = 0;
    double estimate() const;  // the median of the samples taken; 0 without any
  };
  struct Size {
    uint64_t calls = 0;
    Kind kind[2];  // [0] streaming, [1] ordinary stores
    int pending = 0;
  };
  static constexpr int kSizes = 48;  // power-of-two classes of the byte count
  static int size_class(size_t bytes);
  // Calls from one retry to the next, for kinds that cost `a` and `b` per byte.
  static uint64_t retry_spacing(double a, double b);

  ShmStores mode_;
  Size sizes_[kSizes];
};

}  // namespace collx
