// Host staging's copies over the CUDA driver (memory/device_copy.h).
#include "memory/cuda_driver.h"
#include "memory/cuda_driver_api.h"

namespace collx {

namespace {

// Host staging over the driver: two streams of the device's primary context (copies in,
// copies out), an event per slot and queue, pinned slots from cuMemHostAlloc. The streams
// are blocking streams: they also wait for work on the legacy default stream, as a CUDA-aware
// MPI's copies do.
class CudaCopier final : public DeviceCopier {
 public:
  CudaCopier(const Driver& d, int device) : d_(d), pc_(d, device) {}

  ~CudaCopier() override {
    Scope scope(pc_);
    if (!scope.status.ok()) return;
    for (int s = 0; s < kSlots; ++s) {
      for (void* e : {in_done_[s], out_done_[s]}) {
        if (e != nullptr) d_.event_destroy(e);
      }
      if (slots_[s] != nullptr) d_.host_free(slots_[s]);
    }
    if (user_done_ != nullptr) d_.event_destroy(user_done_);
    for (void* st : {in_, out_}) {
      if (st != nullptr) d_.stream_destroy(st);
    }
  }

  Status open() {
    COLLX_TRY(pc_.open());
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    constexpr unsigned kDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
    COLLX_TRY(check(d_.stream_create(&in_, 0), "cuStreamCreate"));
    COLLX_TRY(check(d_.stream_create(&out_, 0), "cuStreamCreate"));
    COLLX_TRY(check(d_.event_create(&user_done_, kDisableTiming), "cuEventCreate"));
    for (int s = 0; s < kSlots; ++s) {
      COLLX_TRY(check(d_.event_create(&in_done_[s], kDisableTiming), "cuEventCreate"));
      COLLX_TRY(check(d_.event_create(&out_done_[s], kDisableTiming), "cuEventCreate"));
    }
    return Status();
  }

  Status reserve(size_t bytes) override {
    if (bytes <= slot_bytes_) return Status();
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    for (int s = 0; s < kSlots; ++s) {
      // Nothing queued still uses the old slots: every call waits for all its copies.
      if (slots_[s] != nullptr) d_.host_free(slots_[s]);
      slots_[s] = nullptr;
    }
    slot_bytes_ = 0;
    for (int s = 0; s < kSlots; ++s) {
      void* p = nullptr;
      COLLX_TRY(check(d_.host_alloc(&p, bytes, 0), "cuMemHostAlloc"));
      slots_[s] = static_cast<uint8_t*>(p);
    }
    slot_bytes_ = bytes;
    return Status();
  }

  uint8_t* slot(int s) override { return slots_[s]; }

  Status copy_in(int s, const void* src, size_t n) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    COLLX_TRY(check(d_.copy_to_host(slots_[s], reinterpret_cast<CUdeviceptr>(src), n, in_),
                    "cuMemcpyDtoHAsync"));
    return check(d_.event_record(in_done_[s], in_), "cuEventRecord");
  }

  Status copy_out(void* dst, int s, size_t n) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    COLLX_TRY(check(d_.copy_to_device(reinterpret_cast<CUdeviceptr>(dst), slots_[s], n, out_),
                    "cuMemcpyHtoDAsync"));
    return check(d_.event_record(out_done_[s], out_), "cuEventRecord");
  }

  // An event never recorded counts as complete, so waiting for an unused slot returns at once.
  Status wait_in(int s) override { return wait(in_done_[s]); }
  Status wait_out(int s) override { return wait(out_done_[s]); }

  Status after_stream(void* stream) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    COLLX_TRY(check(d_.event_record(user_done_, stream), "cuEventRecord on the caller's stream"));
    return check(d_.stream_wait_event(in_, user_done_, 0), "cuStreamWaitEvent");
  }

 private:
  using Scope = PrimaryContext::Scope;

  Status wait(void* event) {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    return check(d_.event_synchronize(event), "cuEventSynchronize");
  }

  Status check(CUresult rc, const char* what) const { return pc_.check(rc, what); }

  const Driver& d_;
  PrimaryContext pc_;  // declared first among the resources: released last
  void* in_ = nullptr;
  void* out_ = nullptr;
  void* user_done_ = nullptr;
  void* in_done_[kSlots] = {};
  void* out_done_[kSlots] = {};
  uint8_t* slots_[kSlots] = {};
  size_t slot_bytes_ = 0;
};

}  // namespace

Status cuda_copier(int device, std::unique_ptr<DeviceCopier>* out) {
  return open_on<CudaCopier>(device, "device memory", out);
}

}  // namespace collx
