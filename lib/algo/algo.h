// Allreduce algorithms see only a Transport (and, for the shm_* ones, a ShmChannel: memory
// shared by the ranks) and a Reducer (no UCX, CUDA or MPI), so each runs unchanged over UCX
// and over the in-process transport of the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "api/status.h"
#include "reduce/reduce.h"
#include "select/select.h"
#include "transport/transport.h"

namespace collx {

class ShmChannel;

// Temporary space owned by the communicator and reused between calls: after warm-up a repeated
// call allocates nothing (and UCX's registration cache keeps it registered).
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { std::free(data_); }

  // Null (with a COLLX_ERR_NO_MEMORY status) if the allocation fails.
  Status get(size_t bytes, uint8_t** out) {
    if (bytes > size_) {
      const size_t n = (bytes + 4095) & ~size_t{4095};
      void* p = std::aligned_alloc(4096, n);
      if (p == nullptr) return error(COLLX_ERR_NO_MEMORY, "out of memory: %zu bytes of scratch", n);
      std::free(data_);
      data_ = static_cast<uint8_t*>(p);
      size_ = n;
    }
    *out = data_;
    return Status();
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct AllreduceArgs {
  Transport& t;
  const Reducer& red;
  const uint8_t* send;  // equals recv for in-place
  uint8_t* recv;
  size_t count;  // > 0; communicator size > 1
  Scratch& scratch;
  size_t segment_bytes;  // ring pipeline segment
  ShmChannel* shm = nullptr;  // shared memory of the ranks, when all share a node
};

Status allreduce_recursive_doubling(const AllreduceArgs& a);
Status allreduce_rabenseifner(const AllreduceArgs& a);
Status allreduce_ring(const AllreduceArgs& a);
Status allreduce_shm_one_shot(const AllreduceArgs& a);  // needs a.shm
Status allreduce_shm_two_shot(const AllreduceArgs& a);  // needs a.shm
Status allreduce_shm_cma(const AllreduceArgs& a);       // needs a.shm with peer access

Status run_allreduce(Algo algo, const AllreduceArgs& a);

Status barrier(Transport& t);

}  // namespace collx
