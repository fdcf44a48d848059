#include "memory/cuda_driver.h"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>

namespace collx {

namespace {

// The few driver API values used here, as cuda.h defines them (stable ABI since CUDA 4/7).
using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr int kAttrMemoryType = 2;   // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttrBufferId = 7;     // CU_POINTER_ATTRIBUTE_BUFFER_ID
constexpr int kAttrIsManaged = 8;    // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kAttrDevice = 9;       // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr int kAttrRangeStart = 11;  // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
constexpr int kAttrRangeSize = 12;   // CU_POINTER_ATTRIBUTE_RANGE_SIZE
constexpr unsigned kMemoryTypeDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr unsigned kMemoryTypeUnified = 4;  // CU_MEMORYTYPE_UNIFIED

// The driver entry points libcollx uses, looked up once.
struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*device_count)(int*);
  CUresult (*pointer_attributes)(unsigned, int*, void**, CUdeviceptr);
  CUresult (*pointer_attribute)(void*, int, CUdeviceptr);
  CUresult (*error_string)(CUresult, const char**);
  CUresult (*device_get)(int*, int);
  CUresult (*primary_retain)(void**, int);
  CUresult (*primary_release)(int);
  CUresult (*ctx_push)(void*);
  CUresult (*ctx_pop)(void**);
  CUresult (*stream_create)(void**, unsigned);
  CUresult (*stream_destroy)(void*);
  CUresult (*stream_synchronize)(void*);
  CUresult (*stream_wait_event)(void*, void*, unsigned);
  CUresult (*event_create)(void**, unsigned);
  CUresult (*event_destroy)(void*);
  CUresult (*event_record)(void*, void*);
  CUresult (*event_synchronize)(void*);
  CUresult (*host_alloc)(void**, size_t, unsigned);
  CUresult (*host_free)(void*);
  CUresult (*copy_to_host)(void*, CUdeviceptr, size_t, void*);
  CUresult (*copy_to_device)(CUdeviceptr, const void*, size_t, void*);
};

class CudaDriverQuery final : public MemoryQuery {
 public:
  explicit CudaDriverQuery(const Driver& d) : d_(d) {}

  bool describe(const void* p, MemRange* out) override {
    unsigned type = 0, managed = 0;
    int device = -1;
    unsigned long long id = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    int which[] = {kAttrMemoryType, kAttrIsManaged, kAttrDevice, kAttrBufferId,
                   kAttrRangeStart, kAttrRangeSize};
    void* data[] = {&type, &managed, &device, &id, &start, &size};
    if (d_.pointer_attributes(6, which, data, reinterpret_cast<CUdeviceptr>(p)) != 0) return false;
    if (type != kMemoryTypeDevice && type != kMemoryTypeUnified) return false;
    out->kind = managed != 0 ? MemKind::kManaged : MemKind::kDevice;
    out->base = static_cast<uintptr_t>(start);
    out->size = size;
    out->device = device;
    out->buffer_id = id;
    return true;
  }

  uint64_t buffer_id(const void* p) override {
    unsigned long long id = 0;
    return d_.pointer_attribute(&id, kAttrBufferId, reinterpret_cast<CUdeviceptr>(p)) == 0 ? id
                                                                                            : 0;
  }

 private:
  const Driver& d_;
};

std::once_flag g_once;
Driver g_driver;
CudaDriverQuery* g_query = nullptr;  // lives as long as the process (the library stays loaded)
std::string g_why;

template <typename F>
bool find(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

void load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    g_why = "no CUDA driver (libcuda.so.1 not found)";
    return;
  }
  Driver& d = g_driver;
  const bool all =
      find(lib, "cuInit", &d.init) && find(lib, "cuDeviceGetCount", &d.device_count) &&
      find(lib, "cuPointerGetAttributes", &d.pointer_attributes) &&
      find(lib, "cuPointerGetAttribute", &d.pointer_attribute) &&
      find(lib, "cuGetErrorString", &d.error_string) && find(lib, "cuDeviceGet", &d.device_get) &&
      find(lib, "cuDevicePrimaryCtxRetain", &d.primary_retain) &&
      find(lib, "cuDevicePrimaryCtxRelease_v2", &d.primary_release) &&
      find(lib, "cuCtxPushCurrent_v2", &d.ctx_push) &&
      find(lib, "cuCtxPopCurrent_v2", &d.ctx_pop) &&
      find(lib, "cuStreamCreate", &d.stream_create) &&
      find(lib, "cuStreamDestroy_v2", &d.stream_destroy) &&
      find(lib, "cuStreamSynchronize", &d.stream_synchronize) &&
      find(lib, "cuStreamWaitEvent", &d.stream_wait_event) &&
      find(lib, "cuEventCreate", &d.event_create) &&
      find(lib, "cuEventDestroy_v2", &d.event_destroy) &&
      find(lib, "cuEventRecord", &d.event_record) &&
      find(lib, "cuEventSynchronize", &d.event_synchronize) &&
      find(lib, "cuMemHostAlloc", &d.host_alloc) && find(lib, "cuMemFreeHost", &d.host_free) &&
      find(lib, "cuMemcpyDtoHAsync_v2", &d.copy_to_host) &&
      find(lib, "cuMemcpyHtoDAsync_v2", &d.copy_to_device);
  int devices = 0;
  if (!all) {
    g_why = "CUDA driver too old (lacks an entry point libcollx uses)";
  } else if (d.init(0) != 0) {
    g_why = "CUDA driver present, cuInit failed (no usable GPU)";
  } else if (d.device_count(&devices) != 0 || devices == 0) {
    g_why = "CUDA driver present, no CUDA device";
  } else {
    g_query = new CudaDriverQuery(d);
    g_why = "CUDA driver, " + std::to_string(devices) + " device(s)";
    return;
  }
  dlclose(lib);
}

const Driver* driver() {
  std::call_once(g_once, load);
  return g_query != nullptr ? &g_driver : nullptr;
}

Status failed(const Driver& d, CUresult rc, const char* what, int device) {
  const char* text = nullptr;
  if (d.error_string(rc, &text) != 0 || text == nullptr) text = "unknown error";
  return error(COLLX_ERR_TRANSPORT, "CUDA driver: %s (device %d) failed: %s (%d)", what, device,
               text, rc);
}

// Host staging over the driver: two streams of the device's primary context (copies in,
// copies out), an event per slot and queue, pinned slots from cuMemHostAlloc. The streams
// are blocking streams: they also wait for work on the legacy default stream, as a CUDA-aware
// MPI's copies do.
class CudaCopier final : public DeviceCopier {
 public:
  CudaCopier(const Driver& d, int device) : d_(d), device_(device) {}

  ~CudaCopier() override {
    if (ctx_ == nullptr) return;
    if (d_.ctx_push(ctx_) == 0) {
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
      void* popped = nullptr;
      d_.ctx_pop(&popped);
    }
    d_.primary_release(cu_device_);
  }

  Status open() {
    CUresult rc = d_.device_get(&cu_device_, device_);
    if (rc != 0) return failed(d_, rc, "cuDeviceGet", device_);
    rc = d_.primary_retain(&ctx_, cu_device_);
    if (rc != 0) {
      ctx_ = nullptr;
      return failed(d_, rc, "cuDevicePrimaryCtxRetain", device_);
    }
    Scope scope(*this);
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
    Scope scope(*this);
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
    Scope scope(*this);
    COLLX_TRY(scope.status);
    COLLX_TRY(check(d_.copy_to_host(slots_[s], reinterpret_cast<CUdeviceptr>(src), n, in_),
                    "cuMemcpyDtoHAsync"));
    return check(d_.event_record(in_done_[s], in_), "cuEventRecord");
  }

  Status copy_out(void* dst, int s, size_t n) override {
    Scope scope(*this);
    COLLX_TRY(scope.status);
    COLLX_TRY(check(d_.copy_to_device(reinterpret_cast<CUdeviceptr>(dst), slots_[s], n, out_),
                    "cuMemcpyHtoDAsync"));
    return check(d_.event_record(out_done_[s], out_), "cuEventRecord");
  }

  // An event never recorded counts as complete, so waiting for an unused slot returns at once.
  Status wait_in(int s) override { return wait(in_done_[s]); }
  Status wait_out(int s) override { return wait(out_done_[s]); }

  Status after_stream(void* stream) override {
    Scope scope(*this);
    COLLX_TRY(scope.status);
    COLLX_TRY(check(d_.event_record(user_done_, stream), "cuEventRecord on the caller's stream"));
    return check(d_.stream_wait_event(in_, user_done_, 0), "cuStreamWaitEvent");
  }

 private:
  // The device's primary context is current for the scope, whatever the caller's thread had.
  struct Scope {
    explicit Scope(CudaCopier& c) : c(c) {
      const CUresult rc = c.d_.ctx_push(c.ctx_);
      if (rc != 0) status = failed(c.d_, rc, "cuCtxPushCurrent", c.device_);
      pushed = rc == 0;
    }
    ~Scope() {
      void* popped = nullptr;
      if (pushed) c.d_.ctx_pop(&popped);
    }
    CudaCopier& c;
    Status status;
    bool pushed = false;
  };

  Status wait(void* event) {
    Scope scope(*this);
    COLLX_TRY(scope.status);
    return check(d_.event_synchronize(event), "cuEventSynchronize");
  }

  Status check(CUresult rc, const char* what) const {
    return rc == 0 ? Status() : failed(d_, rc, what, device_);
  }

  const Driver& d_;
  int device_;
  int cu_device_ = 0;
  void* ctx_ = nullptr;
  void* in_ = nullptr;
  void* out_ = nullptr;
  void* user_done_ = nullptr;
  void* in_done_[kSlots] = {};
  void* out_done_[kSlots] = {};
  uint8_t* slots_[kSlots] = {};
  size_t slot_bytes_ = 0;
};

}  // namespace

MemoryQuery* cuda_memory_query(std::string* why) {
  std::call_once(g_once, load);
  if (why != nullptr) *why = g_why;
  return g_query;
}

Status cuda_copier(int device, std::unique_ptr<DeviceCopier>* out) {
  const Driver* d = driver();
  if (d == nullptr) {
    return error(COLLX_ERR_UNSUPPORTED, "device memory without a usable CUDA driver: %s",
                 g_why.c_str());
  }
  auto c = std::make_unique<CudaCopier>(*d, device);
  COLLX_TRY(c->open());
  *out = std::move(c);
  return Status();
}

Status cuda_stream_synchronize(void* stream) {
  const Driver* d = driver();
  if (d == nullptr && stream == nullptr) return Status();  // no driver: nothing is queued
  if (d == nullptr) {
    return error(COLLX_ERR_UNSUPPORTED, "a CUDA stream without a usable CUDA driver: %s",
                 g_why.c_str());
  }
  const CUresult rc = d->stream_synchronize(stream);
  return rc == 0 ? Status() : failed(*d, rc, "cuStreamSynchronize of the caller's stream", -1);
}

}  // namespace collx
