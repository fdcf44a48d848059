#include "memory/host_mirror.h"

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

// p + lo, and back: where the extent of a buffer starts, and where a buffer whose extent
// starts at `start` would be.
uint8_t* extent_start(const void* p, ptrdiff_t lo) {
  return reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(p) + lo);
}
void* buffer_at(uint8_t* start, ptrdiff_t lo) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(start) - lo);
}

}  // namespace

Status HostCopies::copy_in(MemoryQuery* q, const SyncCopy& copy, const void* send, void* recv,
                           const void* in_place, Extent e) {
  copy_ = copy;
  e_ = e;
  send_ = send;
  recv_ = recv_user_ = recv;
  send_copied_ = recv_copied_ = copied_back_ = false;
  int send_device = -1, recv_device = -1;
  const bool s = e.span > 0 && send != in_place && device_memory(q, send, &send_device);
  const bool r = e.span > 0 && device_memory(q, recv, &recv_device);
  if (s) {
    send_bytes_.resize(e.span);
    COLLX_TRY(copy(send_bytes_.data(), extent_start(send, e.lo), e.span, send_device));
  }
  if (r) {
    recv_bytes_.resize(e.span);
    COLLX_TRY(copy(recv_bytes_.data(), extent_start(recv, e.lo), e.span, recv_device));
  }
  recv_device_ = recv_device;
  send_copied_ = s;
  recv_copied_ = r;
  if (s) send_ = buffer_at(send_bytes_.data(), e.lo);
  if (r) recv_ = buffer_at(recv_bytes_.data(), e.lo);
  return Status();
}

Status HostCopies::copy_back() {
  if (!recv_copied_ || copied_back_) return Status();
  copied_back_ = true;
  return copy_(extent_start(recv_user_, e_.lo), recv_bytes_.data(), e_.span, recv_device_);
}

}  // namespace collx
