// What a rank tells the other ranks of its node about its GPU, through the node's segment
// (the device-buffer algorithms: cuda_ipc.cc, staged_gpu.cc), and the rule both draw from it.
#pragma once

#include <cstdint>

#include "memory/device_ipc.h"

namespace collx {

struct GpuHead {
  DeviceUuid device;  // zero without a device object
  uint32_t ok;        // it can take part (cuda_ipc: its buffers are exported)
  uint32_t mps;       // its device work goes through MPS
};

// This rank's head: its GPU (none without a device object), and `ok` where it has one.
inline GpuHead gpu_head(DeviceIpc* dev, bool ok) {
  GpuHead h{};
  if (dev != nullptr) {
    h.device = dev->uuid();
    h.mps = dev->mps() ? 1 : 0;
  }
  h.ok = dev != nullptr && ok ? 1 : 0;
  return h;
}

// Whether two of p ranks (rank q's head: head_of(q)) share a GPU and one of them works on it
// without MPS: the GPU then runs one process's kernels at a time, each waiting for a time
// slice (about 250 us per process measured on an H100).
template <typename HeadOf>
bool timesliced(int p, HeadOf head_of) {
  for (int q = 0; q < p; ++q) {
    const GpuHead hq = head_of(q);
    for (int s = q + 1; s < p; ++s) {
      const GpuHead hs = head_of(s);
      if (hq.device == hs.device && (hq.mps == 0 || hs.mps == 0)) return true;
    }
  }
  return false;
}

}  // namespace collx
