#include "core/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace collx {

namespace {

const ConfigRow kRows[] = {
    {"COLLX_TIMEOUT", "seconds", "300",
     "Deadline of every collective (at most 1e7 s), counted from its first wait that finds "
     "nothing for 1 ms (so a call that never waits that long reads no clock for it); on expiry "
     "the call returns "
     "COLLX_ERR_TIMEOUT naming the peer and step it waited for. A peer that dies is reported "
     "sooner, as COLLX_ERR_PEER_FAILED."},
    {"COLLX_ALLREDUCE_ALGO", "name", "auto",
     "Force one allreduce algorithm for every size: auto, recursive_doubling, rabenseifner, "
     "ring, shm_one_shot, shm_two_shot, shm_cma, hierarchical (the shm_* ones need all ranks "
     "on one node, shm_cma also that they may read each other's memory; hierarchical needs "
     "them on several nodes, at least 2 on one of them); a communicator whose ranks cannot "
     "run it is not created (COLLX_ERR_CONFIG; under the preload its calls pass through to "
     "MPI, and stderr says why). Set it alike on all ranks."},
    {"COLLX_TUNE", "ranges", "",
     "Override the size-based selection, e.g. "
     "0-4K:recursive_doubling,4K-512K:rabenseifner,512K-inf:ring (half-open byte ranges that "
     "must cover 0-inf without gaps or overlaps). Set it alike on all ranks."},
    {"COLLX_TUNE_ACROSS", "ranges", "",
     "Hierarchical allreduce: the selection of its step between nodes, by the bytes of that "
     "step (one block of the message, about its size over the ranks per node; for small "
     "messages the whole message), in COLLX_TUNE's syntax with recursive_doubling, "
     "rabenseifner and ring (default: the across-nodes defaults for the number of nodes). Set "
     "it alike on all ranks."},
    {"COLLX_RING_SEGMENT", "bytes", "256K",
     "Pipeline segment of the ring algorithm: messages are cut into pieces of this size so "
     "that sends, receives and reductions overlap. Set it alike on all ranks."},
    {"COLLX_SPIN", "microseconds", "20",
     "How long a waiting rank busy-polls before it starts yielding its core between polls "
     "(0: yield at once, for more ranks than cores)."},
    {"COLLX_ASYNC_MIN", "bytes", "64K",
     "collx_iallreduce: an operation of at least this size starts at once, on the "
     "communicator's thread (which overlaps it with the caller's work; that thread runs under "
     "SCHED_BATCH, so it takes a free core but preempts no running thread), unless a test "
     "that polls (within 20 us of the request's previous test) finds it not started: then "
     "the test runs it. A smaller one is "
     "deferred: it runs on the thread that waits for it (no thread hand-over, which costs "
     "more than it takes), on a testing thread once every rank has started it, or on the "
     "communicator's thread 250 us after collx_test is first called for it or within about "
     "2 ms at the latest (20 ms where the node has more ranks than CPUs to run on, those "
     "online within the control group's CPU set: the thread then wakes every 10 ms instead "
     "of every 1 ms). 0: no operation is deferred."},
    {"COLLX_CHECK", "bool", "0",
     "1: before each collective the ranks agree on count, dtype, op, in-place and the kind of "
     "memory (host or CUDA device; one small "
     "extra allreduce); a disagreement is COLLX_ERR_MISMATCH on every rank, naming the first "
     "rank that differs and both calls. Set it on all ranks or none. Without it, the "
     "shared-memory algorithms still compare count, dtype and op (a mismatch on every rank "
     "of the node)."},
    {"COLLX_MPI", "bool", "1",
     "Under LD_PRELOAD=libcollx_mpi.so: 0 turns interception off entirely (every "
     "MPI_Allreduce, MPI_Iallreduce and their large-count _c twins goes to the MPI "
     "library); 0 in one process turns it off in all (they agree in MPI_Init)."},
    {"COLLX_NODE", "name", "",
     "Node identity override: ranks with the same value are treated as sharing a node (default: "
     "the hostname and the kernel's boot id)."},
    {"COLLX_CMA_MIN", "bytes", "16K",
     "Messages of at least this size between ranks of one node are copied once, by the "
     "receiver reading the sender's buffer (cross-memory attach), instead of through UCX. "
     "Set it alike on all ranks."},
    {"COLLX_SHM_CHUNK", "bytes", "256K",
     "Shared-memory algorithms: bytes each rank moves through the segment per step. The "
     "segment holds COLLX_SHM_AREAS(p+1) such chunks; messages of any size stream through it. "
     "shm_cma reads peers' buffers in pieces of this size. Set it alike on all ranks."},
    {"COLLX_SHM_AREAS", "count", "4",
     "Shared-memory algorithms: how many areas of a chunk each rank (and the result) has, used "
     "in turn step by step, so that a rank overwrites what another has read only this many "
     "steps later. Between 2 and 16. On the development VM (2 ranks) 4 was 1.4x to 1.6x "
     "faster than 2 at 1 to 4 MiB in two A/B series on an AMD EPYC, where the other CPU still "
     "held what was overwritten, and 1.0x to 1.1x on an Intel Xeon. Set it alike on all ranks."},
    {"COLLX_SHM_STORES", "name", "auto",
     "shm_two_shot writes the data other ranks read next with streaming (non-temporal) stores, "
     "which are faster where their cores have separate L3 caches, or with ordinary stores, "
     "faster where they share one (measured at 1M: 1.7x to 5x, and 1.5x to 2.2x). auto: each "
     "rank times both per message size and uses the faster, retrying the other every 32nd call, "
     "or less often the costlier that is (down to every 512th); streaming or cached: always "
     "that one."},
    {"COLLX_STAGING_CHUNK", "bytes", "1M",
     "CUDA device buffers are reduced by the host algorithms through pinned host memory in "
     "chunks of this size, each chunk's copy to the host overlapping the previous chunk's "
     "reduction and its copy back the next one's. Set it alike on all ranks."},
    {"COLLX_CUDA", "bool", "1",
     "CUDA device buffers of ranks on one node whose GPUs can read each other's memory (the "
     "same GPU, or peer access) are reduced by GPU kernels over CUDA IPC; 0 stages them "
     "through host memory instead (for comparison). Set it alike on all ranks."},
    {"COLLX_CUDA_TWO_SHOT", "bytes", "2M",
     "CUDA IPC: messages of at least this size use the two-shot algorithm (reduce-scatter, "
     "then allgather through IPC reads), smaller ones the one-shot (every rank reduces all "
     "inputs; measured on an H100 with 2-8 ranks on the GPU: faster up to 1M, slower from "
     "4M). Set it alike on all ranks."},
    {"COLLX_CUDA_IPC_MIN", "bytes", "16K",
     "CUDA IPC: smaller messages are staged through host memory instead, where every GPU runs "
     "one rank or MPS (measured on an H100: staging is faster below about 16K). Set it alike on "
     "all ranks."},
    {"COLLX_CUDA_IPC_MIN_TIMESLICED", "bytes", "2M",
     "CUDA IPC: smaller messages are staged through host memory instead, where ranks share a "
     "GPU without MPS: the GPU then runs one process's kernels at a time, and each kernel waits "
     "for a time slice (about 250 us per process measured on an H100), while copies do not. "
     "Set it alike on all ranks."},
    {"COLLX_CUDA_FLAGS_MAX", "bytes", "2M",
     "CUDA IPC: messages of up to this size (at most 1G; 0: none) are reduced by one kernel "
     "per call, the ranks' kernels waiting for each other through flags in device memory, "
     "with no host round trip; this takes precedence over COLLX_CUDA_IPC_MIN. Only where no "
     "two ranks share a GPU without MPS, and for at most 8 ranks. Every rank keeps a device "
     "area of twice this size (measured on an H100 with 2-8 ranks on the GPU: 1.8-2.4x "
     "faster than the one-shot at 256K and 1M, 1.4-1.8x faster than the two-shot at 2M, "
     "slower at 4M with 4 and 8 ranks). Set it alike on all ranks."},
    {"COLLX_CUDA_STAGED_GPU_MIN", "bytes", "off",
     "CUDA device buffers that are staged through host memory (CUDA IPC does not serve them), "
     "of at least this size and with every rank on one node: each rank copies its chunks into "
     "the node's shared memory, registered with its GPU, and a kernel on every GPU reduces all "
     "ranks' chunks, instead of the host algorithms (the CPU then neither copies nor reduces); "
     "not where ranks share a GPU without MPS. off: never. Off by default until it is "
     "measured on a GPU. Set it alike on all ranks."},
    {"COLLX_PROFILE", "bool", "0",
     "1: each communicator records its allreduces per power-of-two size bucket (calls, time, "
     "bytes, algorithms and, for hierarchical, those it ran between nodes, bus bandwidth) and "
     "its caches' counters (pointer cache hits and misses; IPC registration cache hits, opens "
     "and closes; IPC handles exported); at its destruction rank 0 prints the table combined "
     "over ranks to stderr. Set it on all ranks or none."},
    {"COLLX_PROFILE_FILE", "name", "",
     "With COLLX_PROFILE=1: rank 0 also writes the profile as JSON to this path (one file "
     "per communicator destroyed: the last one wins)."},
    {"COLLX_MPI_VERBOSE", "bool", "0",
     "Under LD_PRELOAD=libcollx_mpi.so: 1 prints at MPI_Finalize how many MPI_Allreduce (and "
     "MPI_Iallreduce, MPI_Allreduce_init and their _c twins) calls libcollx served (and how "
     "many of those failed) and how many it passed through, per reason (and how many of those "
     "went through host copies), in which completion calls the served MPI_Iallreduce and "
     "persistent operations ended, how many persistent starts libcollx ran, how many of rank "
     "0's machine's processes MPI_Init counted on how many CPUs, and how many libcollx "
     "communicators were made (and how many of them wake every 10 ms: more processes on "
     "their machine than CPUs)."},
    {"COLLX_MPI_HOST_COPIES", "bool", "0",
     "Under LD_PRELOAD=libcollx_mpi.so: the calls passed through to the MPI library go "
     "through host copies of their buffers where these are CUDA device memory; 1 makes them "
     "copy host buffers too (slower: a test of that path on machines without a GPU)."},
    {nullptr, nullptr, nullptr, nullptr},
};

Status bad(const char* name, std::string_view value, const char* expected) {
  return error(COLLX_ERR_CONFIG, "%s=%.*s is invalid: expected %s", name,
               static_cast<int>(value.size()), value.data(), expected);
}

}  // namespace

const ConfigRow* config_rows() { return kRows; }

bool parse_bytes(std::string_view s, size_t* out) {
  if (s.empty()) return false;
  size_t mult = 1;
  switch (s.back()) {
    case 'k': case 'K': mult = size_t{1} << 10; break;
    case 'm': case 'M': mult = size_t{1} << 20; break;
    case 'g': case 'G': mult = size_t{1} << 30; break;
    default: break;
  }
  if (mult != 1) s.remove_suffix(1);
  if (s.empty() || s.size() > 19) return false;
  size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  if (v != 0 && mult > SIZE_MAX / v) return false;
  *out = v * mult;
  return true;
}

Status load_config(Config* out, char** env) {
  if (env == nullptr) env = environ;
  Config c;
  std::string values[sizeof kRows / sizeof kRows[0]];
  bool set[sizeof kRows / sizeof kRows[0]] = {};
  for (char** e = env; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "COLLX_", 6) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    const std::string_view name(*e, eq ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    size_t i = 0;
    while (kRows[i].name != nullptr && name != kRows[i].name) ++i;
    if (kRows[i].name == nullptr) {
      return error(COLLX_ERR_CONFIG,
                   "unknown configuration variable %.*s (collx_info --config lists them)",
                   static_cast<int>(name.size()), name.data());
    }
    values[i] = eq ? eq + 1 : "";
    set[i] = true;
  }
  for (size_t i = 0; kRows[i].name != nullptr; ++i) {
    const ConfigRow& row = kRows[i];
    const std::string v = set[i] ? values[i] : row.default_value;
    const std::string_view name = row.name;
    if (name == "COLLX_TIMEOUT") {
      char* end = nullptr;
      errno = 0;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || errno != 0 || !(d > 0) || !(d <= kMaxTimeout)) {
        return bad(row.name, v, "a positive number of seconds, at most 1e7");
      }
      c.timeout_s = d;
    } else if (name == "COLLX_ALLREDUCE_ALGO") {
      c.algo = v;  // validated by the selection layer, which knows the names
    } else if (name == "COLLX_TUNE") {
      c.tune = v;
    } else if (name == "COLLX_TUNE_ACROSS") {
      c.tune_across = v;
    } else if (name == "COLLX_RING_SEGMENT") {
      if (!parse_bytes(v, &c.ring_segment) || c.ring_segment == 0) {
        return bad(row.name, v, "a positive size such as 65536 or 64K");
      }
    } else if (name == "COLLX_NODE") {
      c.node = v;
    } else if (name == "COLLX_SHM_CHUNK") {
      if (!parse_bytes(v, &c.shm_chunk) || c.shm_chunk < 4096 || c.shm_chunk > (1u << 30) ||
          c.shm_chunk % 64 != 0) {
        return bad(row.name, v, "a multiple of 64 bytes between 4K and 1G");
      }
    } else if (name == "COLLX_SHM_AREAS") {
      size_t n = 0;
      if (!parse_bytes(v, &n) || n < 2 || n > 16) return bad(row.name, v, "a number from 2 to 16");
      c.shm_areas = static_cast<int>(n);
    } else if (name == "COLLX_SHM_STORES") {
      if (v != "auto" && v != "streaming" && v != "cached") {
        return bad(row.name, v, "auto, streaming or cached");
      }
      c.shm_stores = v;
    } else if (name == "COLLX_STAGING_CHUNK") {
      if (!parse_bytes(v, &c.staging_chunk) || c.staging_chunk < 4096 ||
          c.staging_chunk > (size_t{1} << 30)) {
        return bad(row.name, v, "a size between 4K and 1G");
      }
    } else if (name == "COLLX_CUDA_TWO_SHOT") {
      if (!parse_bytes(v, &c.cuda_two_shot)) return bad(row.name, v, "a size such as 256K");
    } else if (name == "COLLX_CUDA_IPC_MIN") {
      if (!parse_bytes(v, &c.cuda_ipc_min)) return bad(row.name, v, "a size such as 16K");
    } else if (name == "COLLX_CUDA_IPC_MIN_TIMESLICED") {
      if (!parse_bytes(v, &c.cuda_ipc_min_timesliced)) {
        return bad(row.name, v, "a size such as 2M");
      }
    } else if (name == "COLLX_CUDA_FLAGS_MAX") {
      if (!parse_bytes(v, &c.cuda_flags_max) || c.cuda_flags_max > (size_t{1} << 30)) {
        return bad(row.name, v, "a size of at most 1G such as 64K (0: off)");
      }
    } else if (name == "COLLX_CUDA_STAGED_GPU_MIN") {
      if (v == "off") {
        c.cuda_staged_gpu_min = SIZE_MAX;
      } else if (!parse_bytes(v, &c.cuda_staged_gpu_min)) {
        return bad(row.name, v, "a size such as 1M, or off");
      }
    } else if (name == "COLLX_CMA_MIN") {
      if (!parse_bytes(v, &c.cma_min)) return bad(row.name, v, "a size such as 16K");
    } else if (name == "COLLX_MPI" || name == "COLLX_MPI_VERBOSE" || name == "COLLX_CHECK" ||
               name == "COLLX_PROFILE" || name == "COLLX_CUDA" ||
               name == "COLLX_MPI_HOST_COPIES") {
      if (v != "0" && v != "1") return bad(row.name, v, "0 or 1");
      (name == "COLLX_MPI"       ? c.mpi
       : name == "COLLX_CHECK"   ? c.check
       : name == "COLLX_PROFILE" ? c.profile
       : name == "COLLX_CUDA"    ? c.cuda_ipc
       : name == "COLLX_MPI_HOST_COPIES" ? c.mpi_host_copies
                                 : c.mpi_verbose) = v == "1";
    } else if (name == "COLLX_PROFILE_FILE") {
      c.profile_file = v;
    } else if (name == "COLLX_SPIN") {
      size_t n = 0;
      if (!parse_bytes(v, &n) || n > 1000000000) {
        return bad(row.name, v, "a number of microseconds between 0 and 1e9");
      }
      c.spin = static_cast<int>(n);
    } else if (name == "COLLX_ASYNC_MIN") {
      if (!parse_bytes(v, &c.async_min)) return bad(row.name, v, "a size such as 64K");
    }
  }
  *out = std::move(c);
  return Status();
}

}  // namespace collx
