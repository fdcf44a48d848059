// Copies between CUDA device memory and pinned host memory, for device buffers that the host
// algorithms reduce through host staging (memory/staging.h). An interface, so that the
// staging pipeline runs, and is tested, without a GPU: cuda_copier.cc implements it over the
// CUDA driver, the tests over plain memory with copies that complete only when waited for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "api/status.h"

namespace collx {

class DeviceCopier {
 public:
  // Pinned host buffers ("slots") the pipeline rotates through.
  static constexpr int kSlots = 3;

  virtual ~DeviceCopier() = default;
  // Makes every slot at least `bytes` long (kept, and reused, across calls).
  virtual Status reserve(size_t bytes) = 0;
  virtual uint8_t* slot(int s) = 0;
  // Queues a copy of n bytes from device memory into slot s ("in" queue) or from slot s to
  // device memory ("out" queue). Each queue runs its copies in the order they were queued,
  // asynchronously to the caller and to the other queue.
  virtual Status copy_in(int s, const void* device_src, size_t n) = 0;
  virtual Status copy_out(void* device_dst, int s, size_t n) = 0;
  // Blocks until the last copy queued for slot s on that queue has finished.
  virtual Status wait_in(int s) = 0;
  virtual Status wait_out(int s) = 0;
  // Copies queued from now on start only after the work the caller queued on `stream` (a
  // CUstream / cudaStream_t; null: the legacy default stream) before this call.
  virtual Status after_stream(void* stream) = 0;
};

}  // namespace collx
