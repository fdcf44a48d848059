// Selection: (message bytes, communicator size) -> allreduce algorithm, as one table of
// half-open byte ranges. Defaults are measured (docs/PERFORMANCE.md); COLLX_TUNE replaces the
// ranges and COLLX_ALLREDUCE_ALGO forces one algorithm for every size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/status.h"
#include "core/config.h"
#include "topo/topo.h"

namespace collx {

enum class Algo : uint8_t {
  kRecursiveDoubling,
  kRabenseifner,
  kRing,
  kShmOneShot,  // shared memory: needs every rank of the communicator on one node
  kShmTwoShot,
  kShmCma,  // also needs the ranks to reach each other's memory (cross-memory attach)
  kHierarchical,  // ranks on several nodes, at least 2 on one of them
  // Device buffers (not in the table: chosen by Comm, named in profiles)
  kCudaIpcOneShot,
  kCudaIpcTwoShot,
  kCudaIpcFlags,  // one kernel per call, device flags (small messages)
  kStaged,  // through host memory, chunk by chunk, each chunk by the table's algorithm
  kStagedGpu,  // through the node's shared host memory, chunk by chunk, reduced by the GPUs
  kCount
};
inline bool needs_shm(Algo a) { return a >= Algo::kShmOneShot && a <= Algo::kShmCma; }

// Where a communicator's ranks are: all on one node (shared memory), and if so whether they
// can read each other's memory with cross-memory attach; or on several nodes, at least 2 on
// one of them, with shared memory within each node (hierarchical). And on what CPU: within a
// node the defaults differ by its maker (measured on one of each).
struct Locality {
  bool one_node = false;
  bool peer_access = false;
  bool hierarchical = false;
  CpuMaker cpu = CpuMaker::kOther;
};

const char* algo_name(Algo a);
bool algo_from_name(std::string_view name, Algo* out);

constexpr size_t kInf = SIZE_MAX;

struct SelectRange {
  size_t lo;  // inclusive
  size_t hi;  // exclusive; kInf for no upper bound
  Algo algo;
};

struct Selection {
  std::vector<SelectRange> ranges;  // sorted, contiguous, covering [0, inf)

  Algo pick(size_t bytes) const {
    for (const SelectRange& r : ranges) {
      if (bytes < r.hi) return r.algo;
    }
    return ranges.back().algo;
  }
  bool uses(Algo a) const {
    for (const SelectRange& r : ranges) {
      if (r.algo == a) return true;
    }
    return false;
  }
  std::string to_string() const;  // in COLLX_TUNE syntax
};

// Parses a COLLX_TUNE string; errors name `var` and the offending token.
Status parse_tune(std::string_view s, Selection* out, const char* var = "COLLX_TUNE");

// The measured defaults for a communicator of `comm_size` ranks at `where`.
Selection default_selection(int comm_size, Locality where);

// Defaults, then COLLX_TUNE, then COLLX_ALLREDUCE_ALGO. A shm_* algorithm for a communicator
// that spans nodes, shm_cma where ranks cannot reach each other's memory, or hierarchical
// where the ranks are not on several nodes with two on one, is COLLX_ERR_CONFIG.
Status make_selection(const Config& config, int comm_size, Locality where, Selection* out);

// The hierarchical allreduce's step between nodes, chosen by the bytes of that step: the
// defaults for `nodes` ranks across nodes, or COLLX_TUNE_ACROSS (point-to-point algorithms
// only; anything else is COLLX_ERR_CONFIG).
Status make_across_selection(const Config& config, int nodes, Selection* out);

}  // namespace collx
