// Shared memory of the ranks of one node, for the shm_* allreduce algorithms.
//
// ShmSegment is the memory: an anonymous file (memfd, mode 0600) created by one rank, which has
// no name in /dev/shm, so that nothing is left there whatever happens to the ranks. The
// others open it through the creator's descriptor, /proc/<pid>/fd/<fd> (as UCX's posix
// transport does), which the kernel allows only to processes that may inspect the creator
// (ptrace's read mode: the same user, the creator dumpable, the same PID namespace for the
// path to name it); the creator closes that descriptor once all have attached.
//
// ShmChannel is the layout inside it: per-rank flags on their own cache lines, and data areas
// used in turn, epoch by epoch. It works on any memory shared by the ranks (the unit tests use
// the heap, shared by threads).
//
// Synchronisation is by monotonically increasing step numbers ("epochs"): a rank publishes
// epoch e by a release store of e into its flag, and waits for a peer's flag to reach e with
// acquire loads. Nothing is ever reset, so there is no reset phase and no ABA.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "api/status.h"
#include "transport/peer_memory.h"

namespace collx {

struct alignas(64) ShmFlag {
  std::atomic<uint64_t> epoch{0};
};

// A rank's user buffers in the running epoch (shm_cma): written before `ready` is published,
// read by peers after they see it. In the same line, no flag's: the rank's call
// (algo/shm_sync.h) in the first epoch of each parity that began one, written only when it
// changes, so that a peer's copy of the line stays valid while the calls repeat, and no flag
// a peer spins on is written twice.
struct alignas(64) ShmBuffers {
  uint64_t send = 0;
  uint64_t recv = 0;
  std::atomic<uint64_t> call[2];
};

// cuda_ipc_*: a rank's description of its device buffers (algo/cuda_ipc.cc lays it out),
// written before `ready` is published; its vote, written before `voted` is. staged_gpu: a
// rank's GPU and vote (algo/gpu_head.h) in a call's first epoch e, at staged[e & 1], written
// before `ready` is published, in the padding of the last line (the size is unchanged).
struct alignas(64) ShmIpcArea {
  uint8_t descriptor[256];
  uint32_t vote;
  uint8_t staged[2][24];
};
static_assert(sizeof(ShmIpcArea) == 320);

// shm_one_shot for messages of at most kBytes: the input travels in the line of the flag that
// says it is there, so a peer gets both in one cache-line transfer. Two lines, used alternately
// by epoch like the slots.
struct alignas(64) ShmInline {
  static constexpr size_t kBytes = 56;
  std::atomic<uint64_t> epoch{0};
  uint8_t data[kBytes];
};

struct ShmRankFlags {
  ShmFlag ready;    // its input for the epoch is in its slot (shm_cma, cuda_ipc_*: its
                    // buffers are named)
  ShmFlag reduced;  // its slice of the epoch's result is in the result area
  ShmFlag done;     // shm_cma, cuda_ipc_*: it has copied its result out (its buffers are free
                    // again)
  ShmFlag voted;    // cuda_ipc_*: it has opened the peers' buffers (or failed to) and voted
  ShmFlag aborted;  // cuda_ipc_*: its device work failed in the epoch: it takes no further part
  // shm_one_shot of at most ShmInline::kBytes: its `ready` and its input, by epoch parity.
  ShmInline small[2];
  ShmBuffers buffers;
  ShmIpcArea ipc;
};

class ShmChannel {
 public:
  // Bytes of shared memory for p ranks moving `chunk` bytes per rank per epoch, through
  // `areas` (at least 2) areas each, used in turn (Config::shm_areas).
  static size_t bytes_for(int p, size_t chunk, int areas);
  // `base`: bytes_for(p, chunk, areas) bytes, zero-filled before first use, 64-byte aligned.
  // `pids`: for one-copy access to the other ranks' memory (transport/peer_memory.h), each
  // rank's process id, 0 for threads of this process (the in-process tests); empty where
  // that access is not possible (then shm_cma is not either).
  // `ranks`: the communicator's rank of each of the channel's ranks, where the channel holds
  // some of them (a node of a communicator across nodes); empty: the same numbers.
  ShmChannel(void* base, int rank, int p, size_t chunk, int areas, std::vector<int64_t> pids,
             std::vector<int> ranks = {});

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t chunk() const { return chunk_; }
  ShmRankFlags& flags(int r) const { return flags_[r]; }
  // Rank r's rank in the communicator (for the transport's checks and errors).
  int comm_rank(int r) const { return ranks_.empty() ? r : ranks_[static_cast<size_t>(r)]; }
  // Rank r's input area of an epoch (areas_ of them, used in turn).
  uint8_t* slot(uint64_t epoch, int r) const {
    const size_t area = epoch % areas_;
    return data_ + (area * static_cast<size_t>(size_) + static_cast<size_t>(r)) * chunk_;
  }
  // Every rank's input areas (the slots of every epoch), for staged_gpu to register with CUDA.
  uint8_t* slots_begin() const { return data_; }
  size_t slots_bytes() const { return areas_ * static_cast<size_t>(size_) * chunk_; }
  // The reduced chunk of an epoch (areas_ of them, used in turn).
  uint8_t* result(uint64_t epoch) const {
    return data_ + (areas_ * static_cast<size_t>(size_) + epoch % areas_) * chunk_;
  }
  // Not an epoch: rank r runs the communicator's non-blocking operations numbered up to this
  // one without waiting for anything its caller does (Comm::nudge). After the data areas, so
  // that their page offset stays what it was before these words (1728 bytes for 2 ranks; the
  // offset tests and PERFORMANCE.md rely on it).
  ShmFlag& started(int r) const { return started_[r]; }
  // The next epoch of this rank (every rank counts the same epochs).
  uint64_t next_epoch() { return ++epoch_; }

  bool peer_access() const { return !pids_.empty(); }
  // One copy from rank q's memory at `remote` (needs peer_access()).
  Status read(int q, uint64_t remote, void* local, size_t bytes) const {
    return peer_read(pids_[q], remote, local, bytes);
  }

 private:
  int rank_;
  int size_;
  size_t chunk_;
  size_t areas_;
  ShmRankFlags* flags_;
  uint8_t* data_;
  ShmFlag* started_;
  uint64_t epoch_ = 0;
  std::vector<int64_t> pids_;
  std::vector<int> ranks_;
};

class ShmSegment {
 public:
  // Creates a new segment of `bytes` (zero-filled); its name goes to the other ranks.
  static Status create(size_t bytes, ShmSegment** out);
  // Attaches to `name`, which must be a segment of exactly `bytes` made by create().
  static Status attach(const std::string& name, size_t bytes, ShmSegment** out);
  ~ShmSegment();

  // The creator's: closes the descriptor that the name opens (the memory stays mapped), once
  // every rank has attached. Idempotent.
  void close_name();
  void* base() const { return base_; }
  const std::string& name() const { return name_; }

  // Whether `name` has the form create() gives names, /proc/<pid>/fd/<fd> (checked before a
  // peer's name is used).
  static bool valid_name(const std::string& name);

 private:
  ShmSegment() = default;
  std::string name_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  int fd_ = -1;  // the creator's, until close_name()
};

}  // namespace collx
