#include "select/select.h"

#include <algorithm>
#include <iterator>

#include "algo/algo.h"

namespace collx {

namespace {
constexpr size_t kShmOneShotMax = 16 << 10;  // measured crossovers, 2 ranks (AMD EPYC)
// On an Intel Xeon: the one-shot below 8K, recursive doubling to 16K, the two-shot to 2M.
constexpr size_t kIntelOneShotMax = 8 << 10, kIntelTwoShotMin = 16 << 10;
constexpr size_t kIntelCmaMin = 2 << 20;
constexpr const char* kNames[] = {"recursive_doubling", "rabenseifner", "ring",
                                  "shm_one_shot",       "shm_two_shot", "shm_cma",
                                  "hierarchical",       "cuda_ipc_one_shot",
                                  "cuda_ipc_two_shot",  "cuda_ipc_flags", "staged",
                                  "staged_gpu"};
static_assert(std::size(kNames) == static_cast<size_t>(Algo::kCount));
// The algorithms of the table (host memory); the others are chosen for device buffers.
constexpr size_t kTableAlgos = static_cast<size_t>(Algo::kHierarchical) + 1;

std::string size_string(size_t b) {
  if (b == kInf) return "inf";
  if (b != 0 && b % (size_t{1} << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b != 0 && b % (size_t{1} << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b != 0 && b % (size_t{1} << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

// "recursive_doubling, rabenseifner, ...": for the errors that list the valid names.
std::string all_names() {
  std::string s;
  for (size_t i = 0; i < kTableAlgos; ++i) s += (s.empty() ? "" : ", ") + std::string(kNames[i]);
  return s;
}

Status bad_token(const char* var, std::string_view token, const char* why) {
  return error(COLLX_ERR_CONFIG, "%s: bad token '%.*s': %s", var, static_cast<int>(token.size()),
               token.data(), why);
}
// The ring sends 2(p-1) messages per rank at least, each with a step of its own below
// kMaxSteps: beyond 30721 ranks it would run out of steps.
bool ring_fits(int ranks) { return 2 * (static_cast<int64_t>(ranks) - 1) <= kMaxSteps; }

Status ring_too_large(int ranks) {
  return error(COLLX_ERR_CONFIG,
               "ring cannot run on %d ranks: it needs 2(p-1) = %lld steps, more than its %u "
               "(at most %u ranks)",
               ranks, 2 * (static_cast<long long>(ranks) - 1), kMaxSteps, kMaxSteps / 2 + 1);
}

}  // namespace

const char* algo_name(Algo a) {
  const auto i = static_cast<size_t>(a);
  return i < static_cast<size_t>(Algo::kCount) ? kNames[i] : "unknown";
}

bool algo_from_name(std::string_view name, Algo* out) {
  for (size_t i = 0; i < kTableAlgos; ++i) {
    if (name == kNames[i]) {
      *out = static_cast<Algo>(i);
      return true;
    }
  }
  return false;
}

std::string Selection::to_string() const {
  std::string s;
  for (const SelectRange& r : ranges) {
    if (!s.empty()) s += ',';
    s += size_string(r.lo) + "-" + size_string(r.hi) + ":" + algo_name(r.algo);
  }
  return s;
}

Status parse_tune(std::string_view s, Selection* out, const char* var) {
  Selection sel;
  if (s.empty()) return bad_token(var, s, "empty string");
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    const std::string_view token = s.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t colon = token.find(':');
    const size_t dash = token.find('-');
    if (colon == std::string_view::npos || dash == std::string_view::npos || dash > colon) {
      return bad_token(var, token, "expected LO-HI:ALGORITHM");
    }
    SelectRange r{};
    const std::string_view lo = token.substr(0, dash), hi = token.substr(dash + 1, colon - dash - 1);
    if (!parse_bytes(lo, &r.lo)) return bad_token(var, token, "bad lower bound");
    if (hi == "inf") {
      r.hi = kInf;
    } else if (!parse_bytes(hi, &r.hi)) {
      return bad_token(var, token, "bad upper bound (a size such as 512K, or inf)");
    }
    if (r.hi <= r.lo) {
      return bad_token(var, token, "empty range (upper bound not above lower bound)");
    }
    if (!algo_from_name(token.substr(colon + 1), &r.algo)) {
      return bad_token(var, token, ("unknown algorithm (" + all_names() + ")").c_str());
    }
    sel.ranges.push_back(r);
  }
  std::stable_sort(sel.ranges.begin(), sel.ranges.end(),
                   [](const SelectRange& a, const SelectRange& b) { return a.lo < b.lo; });
  size_t expect = 0;
  for (const SelectRange& r : sel.ranges) {
    const std::string tok = size_string(r.lo) + "-" + size_string(r.hi) + ":" + algo_name(r.algo);
    if (r.lo < expect) return bad_token(var, tok, "overlaps the range before it");
    if (r.lo > expect) {
      return error(COLLX_ERR_CONFIG, "%s: missing range %s-%s before '%s'", var,
                   size_string(expect).c_str(), size_string(r.lo).c_str(), tok.c_str());
    }
    expect = r.hi;
  }
  if (expect != kInf) {
    return error(COLLX_ERR_CONFIG, "%s: missing range %s-inf at the end", var,
                 size_string(expect).c_str());
  }
  *out = std::move(sel);
  return Status();
}

Selection default_selection(int comm_size, Locality where) {
  // Within a node (docs/PERFORMANCE.md, 2 ranks of an AMD EPYC, every algorithm forced): the
  // shared-memory one-shot is the latency path below 16K; from 16K the two-shot, whose copies
  // through the segment are streamed to memory (no cross-core cache probes), beat every
  // point-to-point algorithm and shm_cma at every size up to 16M.
  Selection sel;
  // Across nodes with several ranks on one: shared memory within the nodes, the network
  // only between them, at every size (hierarchical.cc; its step between nodes picks its
  // point-to-point algorithm from this table's defaults for the number of nodes). Chosen by
  // the algorithms' costs: one machine cannot time a network.
  if (where.hierarchical) {
    sel.ranges = {{0, kInf, Algo::kHierarchical}};
    return sel;
  }
  // On an Intel Xeon (2 ranks, docs/PERFORMANCE.md, "Defaults by the CPU's maker"), reading
  // what the other core has just written, as the two-shot does for every element it reduces
  // or copies out, ran 2 - 4.5x slower than on the AMD EPYC of the table after this one.
  // There recursive doubling (over UCX below COLLX_CMA_MIN) beat the one-shot from 8K, and
  // shm_cma, which reads the peers' inputs by cross-memory attach, beat the two-shot from
  // 2M. Between them, recursive doubling and shm_cma were faster only while the inputs are
  // not rewritten between calls: a program that writes its input before each call, as a
  // framework does its gradients, then takes the lines back from the peer that read them,
  // and the two-shot (whose copy in leaves the input in its owner's cache) was faster.
  // Larger communicators keep the table after this one until measured on a machine with
  // enough cores.
  if (where.one_node && where.peer_access && where.cpu == CpuMaker::kIntel && comm_size == 2) {
    sel.ranges = {{0, kIntelOneShotMax, Algo::kShmOneShot},
                  {kIntelOneShotMax, kIntelTwoShotMin, Algo::kRecursiveDoubling},
                  {kIntelTwoShotMin, kIntelCmaMin, Algo::kShmTwoShot},
                  {kIntelCmaMin, kInf, Algo::kShmCma}};
    return sel;
  }
  if (where.one_node) {
    sel.ranges = {{0, kShmOneShotMax, Algo::kShmOneShot}, {kShmOneShotMax, kInf, Algo::kShmTwoShot}};
    return sel;
  }
  // Across nodes, two ranks: recursive doubling is one exchange and won below 1M except at
  // 16K, where its single message crossed a protocol threshold and Rabenseifner's two halves
  // did not; from 4M the pipelined ring won (measured within one node, before shared memory).
  // Larger communicators keep the textbook shape until they are measured on a machine with
  // enough cores: latency-bound below 8K, Rabenseifner while its 2 lg p messages cost less
  // than the ring's 2(p-1), ring for the largest messages.
  if (comm_size <= 2) {
    sel.ranges = {{0, 16 << 10, Algo::kRecursiveDoubling},
                  {16 << 10, 32 << 10, Algo::kRabenseifner},
                  {32 << 10, 1 << 20, Algo::kRecursiveDoubling},
                  {1 << 20, 4 << 20, Algo::kRabenseifner},
                  {4 << 20, kInf, Algo::kRing}};
  } else if (ring_fits(comm_size)) {
    sel.ranges = {{0, 8 << 10, Algo::kRecursiveDoubling},
                  {8 << 10, 1 << 20, Algo::kRabenseifner},
                  {1 << 20, kInf, Algo::kRing}};
  } else {
    sel.ranges = {{0, 8 << 10, Algo::kRecursiveDoubling}, {8 << 10, kInf, Algo::kRabenseifner}};
  }
  return sel;
}

Status make_selection(const Config& config, int comm_size, Locality where, Selection* out) {
  Selection sel = default_selection(comm_size, where);
  if (!config.tune.empty()) COLLX_TRY(parse_tune(config.tune, &sel));
  if (config.algo != "auto") {
    Algo a;
    if (!algo_from_name(config.algo, &a)) {
      return error(COLLX_ERR_CONFIG,
                   "COLLX_ALLREDUCE_ALGO=%s is not an algorithm (auto, %s)",
                   config.algo.c_str(), all_names().c_str());
    }
    sel.ranges = {{0, kInf, a}};
  }
  for (const SelectRange& r : sel.ranges) {
    if (comm_size == 1) break;
    if (needs_shm(r.algo) && !where.one_node) {
      return error(COLLX_ERR_CONFIG,
                   "%s needs every rank of the communicator on one node (these %d ranks span "
                   "nodes)",
                   algo_name(r.algo), comm_size);
    }
    if (r.algo == Algo::kHierarchical && !where.hierarchical) {
      return error(COLLX_ERR_CONFIG,
                   "hierarchical needs the ranks on several nodes, at least 2 on one of them, "
                   "with shared memory within each node (these %d ranks are not)",
                   comm_size);
    }
    if (r.algo == Algo::kRing && !ring_fits(comm_size)) return ring_too_large(comm_size);
    if (r.algo == Algo::kShmCma && !where.peer_access) {
      return error(COLLX_ERR_CONFIG,
                   "shm_cma needs the ranks to read each other's memory with process_vm_readv, "
                   "which this system does not allow them (ptrace restrictions such as "
                   "kernel.yama.ptrace_scope, or different users)");
    }
  }
  *out = std::move(sel);
  return Status();
}

Status make_across_selection(const Config& config, int nodes, Selection* out) {
  Selection sel = default_selection(nodes, Locality{});
  if (!config.tune_across.empty()) {
    COLLX_TRY(parse_tune(config.tune_across, &sel, "COLLX_TUNE_ACROSS"));
  }
  for (const SelectRange& r : sel.ranges) {
    if (needs_shm(r.algo) || r.algo == Algo::kHierarchical) {
      return error(COLLX_ERR_CONFIG,
                   "COLLX_TUNE_ACROSS=%s: %s cannot run between nodes (recursive_doubling, "
                   "rabenseifner or ring)",
                   config.tune_across.c_str(), algo_name(r.algo));
    }
    if (r.algo == Algo::kRing && !ring_fits(nodes)) return ring_too_large(nodes);
  }
  *out = std::move(sel);
  return Status();
}

}  // namespace collx
