// The CUDA driver (libcuda.so.1), loaded at run time when it is there: libcollx has no
// link-time dependency on it, so one build runs on GPU machines and on machines without a
// driver, where every buffer is host memory.
#pragma once

#include <memory>
#include <string>

#include "api/status.h"
#include "memory/device_copy.h"
#include "memory/device_ipc.h"
#include "memory/pointer_cache.h"

namespace collx {

// The process's driver-backed MemoryQuery, or null (with the reason in *why) when there is no
// usable driver: the library, cuInit or any CUDA device missing. Loaded once; thread-safe.
MemoryQuery* cuda_memory_query(std::string* why = nullptr);

// A DeviceCopier for CUDA device `device` (host staging), or COLLX_ERR_UNSUPPORTED without a
// driver, or the driver's error.
Status cuda_copier(int device, std::unique_ptr<DeviceCopier>* out);

// The CUDA IPC allreduce's DeviceIpc for CUDA device `device`, or COLLX_ERR_UNSUPPORTED
// without a driver, or the driver's error.
Status cuda_device_ipc(int device, std::unique_ptr<DeviceIpc>* out);

// Copies `bytes` between host memory and memory of CUDA device `device` (either way, or
// device to device), synchronously (memory/host_mirror.h's SyncCopy).
Status cuda_copy(void* dst, const void* src, size_t bytes, int device);

// Waits for the work queued on a CUstream / cudaStream_t (null: the legacy default stream).
Status cuda_stream_synchronize(void* stream);

}  // namespace collx
