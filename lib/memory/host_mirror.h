// Host copies of device buffers, for code that reads only host memory: the MPI library under
// the PMPI preload, for the calls libcollx passes through to it (user-defined ops, MAXLOC,
// derived datatypes...), so that MPI_Allreduce and MPI_Iallreduce accept device pointers
// whatever MPI is below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "api/status.h"
#include "memory/pointer_cache.h"

namespace collx {

// Copies `bytes` between any two addresses, host or memory of CUDA device `device`; returns
// when the copy is done.
using SyncCopy = std::function<Status(void* dst, const void* src, size_t bytes, int device)>;

// Where a call's bytes lie relative to its buffer pointer: [p + lo, p + lo + span).
struct Extent {
  ptrdiff_t lo = 0;
  size_t span = 0;
};

// The CUDA device that owns p (*device), if p is device memory by `q` (which may be null).
bool device_memory(MemoryQuery* q, const void* p, int* device);

// A call's send and receive buffers as a host-only callee gets them: a buffer in device
// memory is replaced by a host copy of its extent, any other is passed as it is. Used as
//   HostCopies h;  h.copy_in(...);  callee(h.send(), h.recv());  h.copy_back();
// where the callee may also be an operation that ends later (MPI_Iallreduce): the copies live
// as long as the HostCopies.
class HostCopies {
 public:
  // Makes the copies: send's extent if it is device memory (not `in_place`, a marker value
  // passed through unchanged: MPI_IN_PLACE), and recv's, so that bytes of its extent the
  // callee does not write come back as they were. An empty extent copies nothing. On failure
  // send() and recv() are the buffers as they are, and nothing is copied back. Called again
  // with the same buffers and extent, it copies them again into the same host copies (a
  // persistent request's callee keeps their addresses), and copy_back is due once more.
  Status copy_in(MemoryQuery* q, const SyncCopy& copy, const void* send, void* recv,
                 const void* in_place, Extent e);
  // Whether a buffer was replaced by a host copy.
  bool any() const { return send_copied_ || recv_copied_; }
  const void* send() const { return send_; }
  void* recv() const { return recv_; }
  // Writes recv's host copy back to the device buffer (if it had one), once.
  Status copy_back();

 private:
  SyncCopy copy_;
  Extent e_;
  const void* send_ = nullptr;
  void* recv_ = nullptr;
  void* recv_user_ = nullptr;  // the receive buffer the call was given
  int recv_device_ = -1;
  bool send_copied_ = false, recv_copied_ = false, copied_back_ = false;
  std::vector<uint8_t> send_bytes_, recv_bytes_;
};

}  // namespace collx
