// The one-kernel allreduce of small device buffers (algo cuda_ipc_flags): one launch per call,
// the ranks synchronising through flags in device memory, no host round trip.
//
// Every rank owns an area of device memory that every peer has mapped once, through CUDA IPC,
// when the communicator first needed it: a flag per block, then two slots. Call number `seq`
// (1, 2, ..., the same on every rank) uses slot seq % 2. Block b of each rank
//   1. copies chunk b of its input into its own slot,
//   2. publishes flag b = seq (system-scope release, after the block's copies),
//   3. waits until flag b of every peer has reached seq (system-scope acquire),
//   4. reduces chunk b of all slots, in rank order, into its output.
// The ranks therefore read the same bytes in the same order: bitwise identical results, also
// in place (the output is written only from the slots). A slot is written again two calls
// later; by then every peer has finished reading it: a rank's kernel seq+1 ends only when
// every peer has started its own kernel seq+1, which each rank's stream runs after its
// kernel seq, the last reader of slot seq % 2.
//
// The last block to finish writes seq into host memory (FlagsHost::done), which the host polls
// instead of synchronizing the stream: a launch and a poll cost about 1.5 us less than a
// launch and cuStreamSynchronize (measured on an H100 under MPS). Each wait has a deadline
// (the GPU's global timer): a block that gives up writes the rank it waited for, plus one,
// into FlagsHost::gave_up and leaves without writing its output.
//
// Where every rank runs on one GPU the flags need only GPU-scope ordering (its L2 is where all
// of them meet); across GPUs, system scope.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collx/collx.h"
#include "cuda/reduce.h"

namespace collx::cuda {

constexpr int kFlagsMaxRanks = kMaxInputs;
constexpr int kFlagsMaxBlocks = 32;
constexpr size_t kFlagsHeader = 512;  // kFlagsMaxBlocks flags of 8 bytes, the blocks' count

// A slot's size for messages of up to `max_bytes`, and an area's.
constexpr size_t flags_slot_bytes(size_t max_bytes) { return (max_bytes + 255) / 256 * 256; }
constexpr size_t flags_area_bytes(size_t slot_bytes) { return kFlagsHeader + 2 * slot_bytes; }

// Pinned host memory the GPU writes.
struct FlagsHost {
  uint64_t done;  // the seq of the last call whose blocks have all finished
  int gave_up;    // 0, or the rank a block waited for in vain, plus one
};

struct FlagsArgs {
  void* areas[kFlagsMaxRanks];  // rank q's area as this process addresses it (its own too)
  int ranks;                    // 2..kFlagsMaxRanks
  int rank;
  uint64_t seq;                 // >= 1, one more each call
  size_t slot_bytes;            // flags_slot_bytes(): at least count * element size
  const void* send;             // device memory; may equal recv
  void* recv;
  size_t count;                 // >= 1
  uint64_t timeout_ns;          // how long a block waits for a peer
  bool one_gpu;                 // every rank on this GPU: GPU-scope flags
  FlagsHost* host;              // pinned
};

// Launches on `stream` (a cudaStream_t) and returns at once. Returns a cudaError_t:
// cudaErrorInvalidValue for arguments out of range or a dtype/op pair with no meaning.
int allreduce_flags(const FlagsArgs& a, collx_dtype_t dtype, collx_op_t op, void* stream);

}  // namespace collx::cuda
