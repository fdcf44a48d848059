// What the CUDA IPC allreduce (algo/cuda_ipc.cc) needs of one GPU: its identity, whether it
// can read another GPU's memory, exporting and opening allocations across processes, and a
// stream of its own on which it reduces (kernels) and copies. An interface, so that the
// algorithm runs, and is tested, without a GPU: cuda_device_ipc.cc implements it over the CUDA
// driver and the kernels of cuda/, the tests over plain memory whose "device work" takes
// effect only when synchronized, as asynchronous work does.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>

#include "api/status.h"
#include "collx/collx.h"
#include "memory/ipc_cache.h"

namespace collx {

// A GPU's UUID: the same in every process, whatever CUDA_VISIBLE_DEVICES numbers it.
struct DeviceUuid {
  std::array<uint8_t, 16> bytes{};
  auto operator<=>(const DeviceUuid&) const = default;
};

// The one-kernel allreduce (cuda/flags.h) runs on up to this many ranks.
constexpr int kFlagsMaxRanks = 8;

class DeviceIpc : public IpcOpener {
 public:
  virtual DeviceUuid uuid() const = 0;
  // Whether kernels on this device can read memory of device `peer`: the same device, or one
  // with peer access.
  virtual bool can_reach(const DeviceUuid& peer) = 0;
  // Whether this process's work on the device goes through MPS (so that kernels of several
  // processes run at once), rather than the GPU time-slicing between processes.
  virtual bool mps() const = 0;
  // The IPC handle of the allocation that starts at `base`.
  virtual Status export_handle(const void* base, IpcHandle* out) = 0;
  // Device memory of at least `bytes`, owned by this object and kept across calls.
  virtual Status scratch(size_t bytes, void** out) = 0;

  // Blocks until the work queued on `stream` (a cudaStream_t; null: the legacy default
  // stream, which waits for every blocking stream) has finished: the input is complete.
  virtual Status wait_stream(void* stream) = 0;

  // Work on this object's stream, run in the order queued and asynchronously to the caller:
  // dst = in[0] op in[1] op ... op in[n-1] (left to right; avg divides by `ranks`), for any
  // n >= 1. dst may be one of the inputs (the same address, never a partial overlap).
  virtual Status reduce(void* dst, const void* const* in, int n, size_t count,
                        collx_dtype_t dtype, collx_op_t op, int ranks) = 0;
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // staged_gpu: host memory the kernels read. map_host registers [host, host + bytes) with the
  // driver (page-locked, mapped into the device's address space; this object unregisters it
  // when destroyed) and gives the device address of `host`: call it once per range.
  // copy_to_host is queued work like copy, from device memory to such host memory.
  virtual Status map_host(void* host, size_t bytes, void** device) = 0;
  virtual Status copy_to_host(void* host, const void* device_src, size_t bytes) = 0;
  // Blocks until all work queued so far has finished.
  virtual Status synchronize() = 0;

  // The one-kernel allreduce (cuda/flags.h). flag_area: this object's area for messages of up
  // to `max_bytes`, zeroed, allocated on the first call (later calls return it), freed with
  // the object; its own allocation, so that it can be exported.
  virtual Status flag_area(size_t max_bytes, void** out) = 0;
  // Runs the one-kernel allreduce on this object's stream, after the work queued on `stream`
  // where on_stream (else after the legacy default stream's, as every call does) and before
  // the stream's later work, and waits for it. *waited_for: -1, or the rank whose flag the
  // kernel gave up waiting for (its output then incomplete).
  struct FlagsCall {
    void* const* areas;  // per rank, as this process addresses them (flag_area of each)
    int ranks, rank;
    uint64_t seq;        // 1, 2, ...: the same on every rank
    size_t max_bytes;    // as given to flag_area
    const void* send;
    void* recv;
    size_t count;        // > 0, count * element size <= max_bytes
    collx_dtype_t dtype;
    collx_op_t op;
    bool on_stream;
    void* stream;
    double timeout_s;
    int spin_us;         // how long to busy-poll for the end before yielding the core
    bool one_gpu;        // every rank on this GPU
    // The caller's own progress (core: outer_progress, MPI's progress rule under the
    // preload), run about once per millisecond of waiting for the kernel past the spin.
    void (*progress)();
  };
  virtual Status allreduce_flags(const FlagsCall& c, int* waited_for) = 0;
};

}  // namespace collx
