// Allreduce algorithms see only a Transport (and, for the shm_* ones, a ShmChannel: memory
// shared by the ranks) and a Reducer (no UCX, CUDA or MPI), so each runs unchanged over UCX
// and over the in-process transport of the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "algo/store_choice.h"
#include "api/status.h"
#include "memory/ipc_cache.h"
#include "reduce/reduce.h"
#include "select/select.h"
#include "transport/transport.h"

namespace collx {

class ShmChannel;
class DeviceIpc;
struct Fold;

// Temporary space owned by the communicator and reused between calls: after warm-up a repeated
// call allocates nothing (and UCX's registration cache keeps it registered). Page-aligned,
// through operator new like the library's other allocations.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { ::operator delete(data_, kAlign); }

  // Gives up the space without freeing it (null if none); free it with free_released.
  uint8_t* release() {
    uint8_t* p = data_;
    data_ = nullptr;
    size_ = 0;
    return p;
  }
  static void free_released(void* p) { ::operator delete(p, kAlign); }

  // Null (with a COLLX_ERR_NO_MEMORY status) if the allocation fails.
  Status get(size_t bytes, uint8_t** out) {
    if (bytes > size_) {
      const size_t n = (bytes + 4095) & ~size_t{4095};
      void* p = ::operator new(n, kAlign, std::nothrow);
      if (p == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory: %zu bytes of scratch", n);
      ::operator delete(data_, kAlign);
      data_ = static_cast<uint8_t*>(p);
      size_ = n;
    }
    *out = data_;
    return Status();
  }

 private:
  static constexpr std::align_val_t kAlign{4096};
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// What the hierarchical allreduce needs besides the communicator's transport: the shared
// memory of this rank's node (its ranks numbered by local rank), the blocks this rank owns
// (NodeLayout) with the transport of each one's owners, and the table that picks their
// algorithm by size.
struct Hierarchy {
  ShmChannel* node = nullptr;  // null: this rank is alone on its node
  int blocks = 0;              // a message's blocks; on a node of k ranks, local rank
                               // b mod k owns block b
  bool even = false;           // every node has `blocks` ranks (one block each)
  bool serial_groups = false;  // some rank owns several blocks (runs their groups in turn)
  struct Group {
    int block = 0;
    Transport* across = nullptr;  // a GroupTransport: the block's owners, nodes in the
                                  // same order in every group
  };
  std::vector<Group> groups;   // the blocks this rank owns, ascending
  const Selection* table = nullptr;
  int64_t* across_ran = nullptr;  // the profile's: bit i set when step 2 ran Algo i
};

// Every algorithm numbers the messages of one operation between two ranks with steps below
// kMaxSteps, so that no two share a tag (UCX tags carry 16 bits of step) and the call check
// (COLLX_CHECK, Comm::check_agreement) has the steps from kMaxSteps up to itself.
inline constexpr uint32_t kMaxSteps = 0xf000;

struct AllreduceArgs {
  Transport& t;
  const Reducer& red;
  const uint8_t* send;  // equals recv for in-place
  uint8_t* recv;
  size_t count;  // > 0; communicator size > 1
  Scratch& scratch;
  size_t segment_bytes;  // ring pipeline segment
  ShmChannel* shm = nullptr;  // shared memory of the ranks, when all share a node
  StoreChoice* stores = nullptr;  // shm_two_shot's kind of stores; null: streaming
  const Hierarchy* hier = nullptr;  // ranks on several nodes (Algo::kHierarchical)
  // avg: the number of inputs in the sum, which each element's finished sum is divided by,
  // once, by the rank that finishes it (before the others get it: finish()). 0: no division
  // (other ops, and the hierarchical allreduce's steps within a node, which finish nothing).
  int divisor = 0;
};

// avg's division of `n` elements at `buf` whose sum this rank has just finished; nothing for
// the other ops. Every rank that gets those elements gets them divided, so all get the same bits.
inline void finish(const AllreduceArgs& a, uint8_t* buf, size_t n) {
  if (a.divisor > 0 && n > 0) a.red.finalize(buf, n, a.divisor);
}

Status allreduce_recursive_doubling(const AllreduceArgs& a);
Status allreduce_rabenseifner(const AllreduceArgs& a);
Status allreduce_ring(const AllreduceArgs& a);
Status allreduce_shm_one_shot(const AllreduceArgs& a);  // needs a.shm
Status allreduce_shm_two_shot(const AllreduceArgs& a);  // needs a.shm
Status allreduce_shm_cma(const AllreduceArgs& a);       // needs a.shm with peer access
Status allreduce_hierarchical(const AllreduceArgs& a);  // needs a.hier

// The steps of the hierarchical allreduce within a node, through a.shm (whose ranks are the
// node's, p of them): after shm_reduce_scatter, the channel's rank b mod p holds
// block(count, blocks, b) of the reduction of every rank's input (in rank order) in that
// block of recv, for every block b; shm_allgather copies each block from its owner's recv
// into every other rank's.
Status shm_reduce_scatter(const AllreduceArgs& a, int blocks);
Status shm_allgather(const AllreduceArgs& a, int blocks);

Status run_allreduce(Algo algo, const AllreduceArgs& a);

// The fold of a non-power-of-two rank count (rank_math.h) around recursive doubling and
// Rabenseifner, which run on the q = pow2_floor(p) ranks left. fold_in: a rank that sits out
// hands its input to its partner, gets the result back at step `unfold_step` and sets
// *sat_out; its partner reduces the pair's inputs, in rank order, into recv (through `tmp`,
// count elements) and points *cur at it. fold_out: the partner sends the result back.
Status fold_in(const AllreduceArgs& a, const Fold& f, uint32_t unfold_step, uint8_t* tmp,
               const uint8_t** cur, bool* sat_out);
Status fold_out(const AllreduceArgs& a, const Fold& f, uint32_t unfold_step);

// The CUDA IPC allreduce of device buffers, for the ranks of one node (algo/cuda_ipc.cc).
struct CudaIpcArgs {
  Transport& t;         // for the deadline of every wait
  ShmChannel& ch;       // flags and buffer descriptions
  Scratch& scratch;     // host memory for the peers' addresses (no allocation per call)
  DeviceIpc* dev;       // null: this rank cannot take part
  IpcCache* peers;      // the peers' allocations opened here (through dev)
  collx_dtype_t dtype;
  collx_op_t op;
  size_t elem_size;
  const uint8_t* send;  // device memory; equals recv for in-place
  uint8_t* recv;
  size_t count;         // > 0; communicator size > 1
  bool exported;        // send_x and recv_x are valid
  IpcExport send_x, recv_x;
  bool two_shot;        // cuda_ipc_two_shot, else cuda_ipc_one_shot
  // Below these sizes every rank stages instead (Config::cuda_ipc_min, and
  // cuda_ipc_min_timesliced where two ranks share a GPU without MPS).
  size_t ipc_min;
  size_t ipc_min_timesliced;
};

// Every rank describes its buffers and opens the peers'; where any rank cannot (no IPC
// handle, a device it cannot reach, an open that fails), all of them see it and return with
// *ran false having reduced nothing, for the caller to stage the buffers instead.
Status allreduce_cuda_ipc(const CudaIpcArgs& a, bool* ran);

// The one-kernel allreduce's setup (cuda/flags.h), once per communicator: every rank makes
// its flag area, describes it and opens the peers'. *on: every rank could, there are at most
// kFlagsMaxRanks ranks, and no two share a GPU without MPS (kernels that wait for each other
// must run at once); then areas[q] (p entries) is rank q's area as this process addresses it,
// the peers' open through dev until the caller closes them, and *one_gpu says whether all
// ranks run on one GPU. Else none is left open.
struct CudaFlagsSetupArgs {
  Transport& t;
  ShmChannel& ch;
  DeviceIpc* dev;    // null: this rank cannot take part
  size_t max_bytes;  // the largest message (Config::cuda_flags_max)
};
Status cuda_flags_setup(const CudaFlagsSetupArgs& a, bool* on, bool* one_gpu, void** areas);

// staged_gpu (algo/staged_gpu.cc): device buffers of the ranks of one node, through the
// node's shared memory chunk by chunk, every rank's GPU reducing all ranks' chunks. Where any
// rank cannot take part (no device object, or the segment not registered with it), all of
// them see it in the first epoch and return with *ran false, for the caller to stage instead.
struct StagedGpuArgs {
  Transport& t;
  ShmChannel& ch;
  Scratch& scratch;       // host memory for the kernels' inputs (no allocation per call)
  DeviceIpc* dev;         // null: this rank cannot take part
  uint8_t* slots_device;  // ch.slots_begin() as dev's kernels address it (map_host)
  collx_dtype_t dtype;
  collx_op_t op;
  size_t elem_size;
  uint32_t kind;          // Reducer::kind, for the call check
  const uint8_t* send;    // device memory; equals recv for in-place
  uint8_t* recv;
  size_t count;           // > 0; communicator size > 1
};
Status allreduce_staged_gpu(const StagedGpuArgs& a, bool* ran);

Status barrier(Transport& t);

}  // namespace collx
