// Host copies of device buffers, for code that reads only host memory: the MPI library under
// the PMPI preload, for the calls libcollx passes through to it (user-defined ops, MAXLOC,
// derived datatypes...), so that MPI_Allreduce accepts device pointers whatever MPI is below.
#pragma once

#include <cstddef>
#include <functional>

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

// Runs call(send', recv'), where a buffer in device memory is replaced by a host copy of its
// extent (recv's copied back after the call) and any other is passed as it is. `in_place`
// is a marker value for send that is passed through unchanged (MPI_IN_PLACE).
Status with_host_copies(MemoryQuery* q, const SyncCopy& copy, const void* send, void* recv,
                        const void* in_place, Extent e,
                        const std::function<void(const void* send, void* recv)>& call);

}  // namespace collx
