#include "memory/host_mirror.h"

#include <cstdint>
#include <vector>

namespace collx {

bool device_memory(MemoryQuery* q, const void* p, int* device) {
  MemRange r;
  if (q == nullptr || p == nullptr || !q->describe(p, &r) || r.kind != MemKind::kDevice) {
    return false;
  }
  *device = r.device;
  return true;
}

namespace {

// A host copy of [p + lo, p + lo + span) of device memory; at() is where p maps to.
struct Mirror {
  std::vector<uint8_t> bytes;
  uintptr_t at(ptrdiff_t lo) const { return reinterpret_cast<uintptr_t>(bytes.data()) - lo; }
};

const void* shifted(const void* p, ptrdiff_t lo) {
  return reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + lo);
}

}  // namespace

Status with_host_copies(MemoryQuery* q, const SyncCopy& copy, const void* send, void* recv,
                        const void* in_place, Extent e,
                        const std::function<void(const void*, void*)>& call) {
  int send_dev = -1, recv_dev = -1;
  const bool s = send != in_place && device_memory(q, send, &send_dev);
  const bool r = device_memory(q, recv, &recv_dev);
  if ((!s && !r) || e.span == 0) {
    call(send, recv);
    return Status();
  }
  Mirror ms, mr;
  if (s) {
    ms.bytes.resize(e.span);
    COLLX_TRY(copy(ms.bytes.data(), shifted(send, e.lo), e.span, send_dev));
  }
  if (r) {  // copied in too: bytes of the extent that the call does not write stay as they are
    mr.bytes.resize(e.span);
    COLLX_TRY(copy(mr.bytes.data(), shifted(recv, e.lo), e.span, recv_dev));
  }
  call(s ? reinterpret_cast<const void*>(ms.at(e.lo)) : send,
       r ? reinterpret_cast<void*>(mr.at(e.lo)) : recv);
  if (r) {
    COLLX_TRY(copy(const_cast<void*>(shifted(recv, e.lo)), mr.bytes.data(), e.span, recv_dev));
  }
  return Status();
}

}  // namespace collx
