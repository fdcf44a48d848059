#include "memory/cuda_driver.h"

#include <dlfcn.h>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "collx_build_config.h"
#if COLLX_HAVE_CUDA
#include "cuda/flags.h"
#include "cuda/reduce.h"
static_assert(collx::cuda::kFlagsMaxRanks == collx::kFlagsMaxRanks);
#endif

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
constexpr unsigned kIpcLazyPeerAccess = 1;  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
struct CuIpcMemHandle {                     // CUipcMemHandle, passed by value
  char reserved[64];
};

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
  CUresult (*stream_query)(void*);
  CUresult (*stream_wait_event)(void*, void*, unsigned);
  CUresult (*event_create)(void**, unsigned);
  CUresult (*event_destroy)(void*);
  CUresult (*event_record)(void*, void*);
  CUresult (*event_synchronize)(void*);
  CUresult (*host_alloc)(void**, size_t, unsigned);
  CUresult (*host_free)(void*);
  CUresult (*copy_to_host)(void*, CUdeviceptr, size_t, void*);
  CUresult (*copy_to_device)(CUdeviceptr, const void*, size_t, void*);
  CUresult (*copy_device)(CUdeviceptr, CUdeviceptr, size_t, void*);
  CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*memset_async)(CUdeviceptr, unsigned char, size_t, void*);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*ipc_get)(CuIpcMemHandle*, CUdeviceptr);
  CUresult (*ipc_open)(CUdeviceptr*, CuIpcMemHandle, unsigned);
  CUresult (*ipc_close)(CUdeviceptr);
  CUresult (*device_uuid)(DeviceUuid*, int);
  CUresult (*device_attribute)(int*, int, int);
  CUresult (*can_access_peer)(int*, int, int);
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
      find(lib, "cuStreamQuery", &d.stream_query) &&
      find(lib, "cuStreamWaitEvent", &d.stream_wait_event) &&
      find(lib, "cuEventCreate", &d.event_create) &&
      find(lib, "cuEventDestroy_v2", &d.event_destroy) &&
      find(lib, "cuEventRecord", &d.event_record) &&
      find(lib, "cuEventSynchronize", &d.event_synchronize) &&
      find(lib, "cuMemHostAlloc", &d.host_alloc) && find(lib, "cuMemFreeHost", &d.host_free) &&
      find(lib, "cuMemcpyDtoHAsync_v2", &d.copy_to_host) &&
      find(lib, "cuMemcpyHtoDAsync_v2", &d.copy_to_device) &&
      find(lib, "cuMemcpyDtoDAsync_v2", &d.copy_device) && find(lib, "cuMemcpy", &d.copy) &&
      find(lib, "cuMemsetD8Async", &d.memset_async) &&
      find(lib, "cuMemAlloc_v2", &d.mem_alloc) && find(lib, "cuMemFree_v2", &d.mem_free) &&
      find(lib, "cuIpcGetMemHandle", &d.ipc_get) &&
      find(lib, "cuIpcOpenMemHandle_v2", &d.ipc_open) &&
      find(lib, "cuIpcCloseMemHandle", &d.ipc_close) &&
      find(lib, "cuDeviceGetUuid_v2", &d.device_uuid) &&
      find(lib, "cuDeviceGetAttribute", &d.device_attribute) &&
      find(lib, "cuDeviceCanAccessPeer", &d.can_access_peer);
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

const char* driver_text(const Driver& d, CUresult rc) {
  const char* text = nullptr;
  if (d.error_string(rc, &text) != 0 || text == nullptr) text = "unknown error";
  return text;
}

Status failed(const Driver& d, CUresult rc, const char* what, int device) {
  return error(COLLX_ERR_TRANSPORT, "CUDA driver: %s (device %d) failed: %s (%d)", what, device,
               driver_text(d, rc), rc);
}

// A device's primary context, retained for the owner's lifetime; a Scope makes it current
// for the duration of a call, whatever the caller's thread had current.
class PrimaryContext {
 public:
  PrimaryContext(const Driver& d, int device) : d(d), device(device) {}
  ~PrimaryContext() {
    if (ctx != nullptr) d.primary_release(cu_device);
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  Status open() {
    CUresult rc = d.device_get(&cu_device, device);
    if (rc != 0) return failed(d, rc, "cuDeviceGet", device);
    rc = d.primary_retain(&ctx, cu_device);
    if (rc != 0) {
      ctx = nullptr;
      return failed(d, rc, "cuDevicePrimaryCtxRetain", device);
    }
    return Status();
  }

  Status check(CUresult rc, const char* what) const {
    return rc == 0 ? Status() : failed(d, rc, what, device);
  }

  struct Scope {
    explicit Scope(const PrimaryContext& c) : c(c) {
      const CUresult rc = c.ctx != nullptr ? c.d.ctx_push(c.ctx) : 201;  // INVALID_CONTEXT
      if (rc != 0) status = failed(c.d, rc, "cuCtxPushCurrent", c.device);
      pushed = rc == 0;
    }
    ~Scope() {
      void* popped = nullptr;
      if (pushed) c.d.ctx_pop(&popped);
    }
    const PrimaryContext& c;
    Status status;
    bool pushed = false;
  };

  const Driver& d;
  const int device;
  int cu_device = 0;
  void* ctx = nullptr;
};

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

// The CUDA IPC allreduce's device over the driver: a blocking stream of the device's primary
// context (so its work also waits for the legacy default stream), the kernels of cuda/ (the
// runtime launches them into the current, primary, context), IPC handles through the driver.
class CudaDeviceIpc final : public DeviceIpc {
 public:
  CudaDeviceIpc(const Driver& d, int device) : d_(d), pc_(d, device) {}

  ~CudaDeviceIpc() override {
    Scope scope(pc_);
    if (!scope.status.ok()) return;
    if (stream_ != nullptr) d_.stream_synchronize(stream_);
    for (CUdeviceptr p : {scratch_.p, chain_.p, area_.p}) {
      if (p != 0) d_.mem_free(p);
    }
#if COLLX_HAVE_CUDA
    if (host_ != nullptr) d_.host_free(host_);
#endif
    if (user_done_ != nullptr) d_.event_destroy(user_done_);
    if (stream_ != nullptr) d_.stream_destroy(stream_);
  }

  Status open() {
    COLLX_TRY(pc_.open());
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    COLLX_TRY(pc_.check(d_.device_uuid(&uuid_, pc_.cu_device), "cuDeviceGetUuid"));
    // A driver older than the attribute (CUDA 12.4) refuses it: then not known to be MPS.
    constexpr int kAttrMpsEnabled = 133;  // CU_DEVICE_ATTRIBUTE_MPS_ENABLED
    int mps = 0;
    mps_ = d_.device_attribute(&mps, kAttrMpsEnabled, pc_.cu_device) == 0 && mps != 0;
    constexpr unsigned kDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
    COLLX_TRY(pc_.check(d_.event_create(&user_done_, kDisableTiming), "cuEventCreate"));
    return pc_.check(d_.stream_create(&stream_, 0), "cuStreamCreate");
  }

  DeviceUuid uuid() const override { return uuid_; }
  bool mps() const override { return mps_; }

  bool can_reach(const DeviceUuid& peer) override {
    if (peer == uuid_) return true;
    if (auto it = reach_.find(peer); it != reach_.end()) return it->second;
    bool can = false;
    int n = 0;
    if (d_.device_count(&n) == 0) {
      for (int i = 0; i < n; ++i) {
        int dev = 0, access = 0;
        DeviceUuid u;
        if (d_.device_get(&dev, i) != 0 || d_.device_uuid(&u, dev) != 0 || u != peer) continue;
        can = d_.can_access_peer(&access, pc_.cu_device, dev) == 0 && access != 0;
        break;
      }
    }
    reach_[peer] = can;  // a device this process cannot see is out of reach too
    return can;
  }

  Status export_handle(const void* base, IpcHandle* out) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    CuIpcMemHandle h;
    COLLX_TRY(pc_.check(d_.ipc_get(&h, reinterpret_cast<CUdeviceptr>(base)), "cuIpcGetMemHandle"));
    static_assert(sizeof h == sizeof out->bytes);
    std::memcpy(out->bytes.data(), &h, sizeof h);
    return Status();
  }

  Status open(int peer, const IpcHandle& handle, void** base) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    CuIpcMemHandle h;
    std::memcpy(&h, handle.bytes.data(), sizeof h);
    CUdeviceptr p = 0;
    const CUresult rc = d_.ipc_open(&p, h, kIpcLazyPeerAccess);
    if (rc != 0) {
      return error(COLLX_ERR_TRANSPORT,
                   "CUDA driver: cuIpcOpenMemHandle of rank %d's buffer (device %d) failed: %s (%d)",
                   peer, pc_.device, driver_text(d_, rc), rc);
    }
    *base = reinterpret_cast<void*>(p);
    return Status();
  }

  void close(void* base) override {
    Scope scope(pc_);
    if (scope.status.ok()) d_.ipc_close(reinterpret_cast<CUdeviceptr>(base));
  }

  Status scratch(size_t bytes, void** out) override {
    COLLX_TRY(grow(&scratch_, bytes));
    *out = reinterpret_cast<void*>(scratch_.p);
    return Status();
  }

  Status wait_stream(void* stream) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    return pc_.check(d_.stream_synchronize(stream), "cuStreamSynchronize of the caller's stream");
  }

  // The kernels take up to cuda::kMaxInputs inputs in one pass; more are reduced in groups
  // through a buffer of this object, left to right, so dst may still be any of the inputs.
  Status reduce(void* dst, const void* const* in, int n, size_t count, collx_dtype_t dtype,
                collx_op_t op, int ranks) override {
#if COLLX_HAVE_CUDA
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    constexpr int kMax = cuda::kMaxInputs;
    if (n <= kMax) return launched(cuda::reduce(dst, in, n, count, dtype, op, ranks, stream_));
    COLLX_TRY(grow(&chain_, count * collx_dtype_size(dtype)));
    void* acc = reinterpret_cast<void*>(chain_.p);
    const collx_op_t partial = op == COLLX_AVG ? COLLX_SUM : op;  // avg divides once, at the end
    COLLX_TRY(launched(cuda::reduce(acc, in, kMax, count, dtype, partial, 1, stream_)));
    const void* group[kMax];
    for (int k = kMax; k < n;) {
      const int take = std::min(kMax - 1, n - k);
      group[0] = acc;
      for (int j = 0; j < take; ++j) group[1 + j] = in[k + j];
      k += take;
      const bool last = k == n;
      COLLX_TRY(launched(cuda::reduce(last ? dst : acc, group, 1 + take, count, dtype,
                                      last ? op : partial, ranks, stream_)));
    }
    return Status();
#else
    (void)dst, (void)in, (void)n, (void)count, (void)dtype, (void)op, (void)ranks;
    return error(COLLX_ERR_UNSUPPORTED, "libcollx was built without its CUDA kernels");
#endif
  }

  Status copy(void* dst, const void* src, size_t bytes) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    return pc_.check(d_.copy_device(reinterpret_cast<CUdeviceptr>(dst),
                                    reinterpret_cast<CUdeviceptr>(src), bytes, stream_),
                     "cuMemcpyDtoDAsync");
  }

  Status synchronize() override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    return pc_.check(d_.stream_synchronize(stream_), "cuStreamSynchronize");
  }

  Status flag_area(size_t max_bytes, void** out) override {
#if COLLX_HAVE_CUDA
    if (area_.p == 0) {
      Scope scope(pc_);
      COLLX_TRY(scope.status);
      // What the kernel tells the host: pinned, so the GPU writes it directly.
      constexpr unsigned kPortableMapped = 0x01 | 0x02;  // CU_MEMHOSTALLOC_PORTABLE|DEVICEMAP
      void* host = nullptr;
      COLLX_TRY(pc_.check(d_.host_alloc(&host, sizeof(cuda::FlagsHost), kPortableMapped),
                          "cuMemHostAlloc"));
      host_ = static_cast<cuda::FlagsHost*>(host);
      *host_ = cuda::FlagsHost{};
      const size_t bytes = cuda::flags_area_bytes(cuda::flags_slot_bytes(max_bytes));
      COLLX_TRY(pc_.check(d_.mem_alloc(&area_.p, bytes), "cuMemAlloc"));
      area_.bytes = bytes;
      COLLX_TRY(pc_.check(d_.memset_async(area_.p, 0, bytes, stream_), "cuMemsetD8Async"));
      COLLX_TRY(pc_.check(d_.stream_synchronize(stream_), "cuStreamSynchronize"));
      area_max_ = max_bytes;
    }
    if (max_bytes > area_max_) {
      return error(COLLX_ERR_INVALID_ARG, "flag area of %zu bytes asked for, %zu made",
                   max_bytes, area_max_);
    }
    *out = reinterpret_cast<void*>(area_.p);
    return Status();
#else
    (void)max_bytes, (void)out;
    return error(COLLX_ERR_UNSUPPORTED, "libcollx was built without its CUDA kernels");
#endif
  }

  Status allreduce_flags(const FlagsCall& c, int* waited_for) override {
#if COLLX_HAVE_CUDA
    *waited_for = -1;
    if (host_ == nullptr || c.ranks > cuda::kFlagsMaxRanks) {
      return error(COLLX_ERR_INVALID_ARG, "one-kernel allreduce: no flag area, or %d ranks",
                   c.ranks);
    }
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    if (c.on_stream) {
      COLLX_TRY(pc_.check(d_.event_record(user_done_, c.stream),
                          "cuEventRecord on the caller's stream"));
      COLLX_TRY(pc_.check(d_.stream_wait_event(stream_, user_done_, 0), "cuStreamWaitEvent"));
    }
    cuda::FlagsArgs a{};
    for (int q = 0; q < c.ranks; ++q) a.areas[q] = c.areas[q];
    a.ranks = c.ranks;
    a.rank = c.rank;
    a.seq = c.seq;
    a.slot_bytes = cuda::flags_slot_bytes(c.max_bytes);
    a.send = c.send;
    a.recv = c.recv;
    a.count = c.count;
    a.timeout_ns = static_cast<uint64_t>(std::min(c.timeout_s, 1e7) * 1e9);
    a.one_gpu = c.one_gpu;
    a.host = host_;
    COLLX_TRY(launched(cuda::allreduce_flags(a, c.dtype, c.op, stream_)));
    COLLX_TRY(wait_done(c));
    if (c.on_stream) {  // the caller's later work waits for the kernel's end
      COLLX_TRY(pc_.check(d_.event_record(user_done_, stream_), "cuEventRecord"));
      COLLX_TRY(pc_.check(d_.stream_wait_event(c.stream, user_done_, 0),
                          "cuStreamWaitEvent on the caller's stream"));
    }
    const int word = *static_cast<volatile int*>(&host_->gave_up);
    if (word != 0) {
      *waited_for = word - 1;
      host_->gave_up = 0;
    }
    return Status();
#else
    (void)c, (void)waited_for;
    return error(COLLX_ERR_UNSUPPORTED, "libcollx was built without its CUDA kernels");
#endif
  }

 private:
  using Scope = PrimaryContext::Scope;
  struct Buffer {
    CUdeviceptr p = 0;
    size_t bytes = 0;
  };

#if COLLX_HAVE_CUDA
  // Polls FlagsHost::done until the kernel of call c.seq says it has finished: spinning for
  // c.spin_us, then yielding the core between polls. Past the spin, every 64th poll queries
  // the stream, so that a kernel that failed is an error (and one that ended is done), and
  // checks the deadline: the kernel's own waits give up after c.timeout_s.
  Status wait_done(const FlagsCall& c) {
    constexpr CUresult kNotReady = 600;  // CUDA_ERROR_NOT_READY
    const auto start = std::chrono::steady_clock::now();
    const volatile uint64_t* done = &host_->done;
    for (uint64_t polls = 1; *done != c.seq; ++polls) {
      if (polls % 64 != 0) continue;
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited * 1e6 < c.spin_us) continue;
      const CUresult rc = d_.stream_query(stream_);
      if (rc == 0) return Status();
      if (rc != kNotReady) return pc_.check(rc, "the one-kernel allreduce (cuStreamQuery)");
      if (waited > c.timeout_s + 10) {
        return error(COLLX_ERR_TIMEOUT,
                     "the one-kernel allreduce on device %d did not end within %g s",
                     pc_.device, waited);
      }
      sched_yield();
    }
    return Status();
  }
#endif

  Status grow(Buffer* b, size_t bytes) {
    if (bytes <= b->bytes) return Status();
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    COLLX_TRY(pc_.check(d_.stream_synchronize(stream_), "cuStreamSynchronize"));  // not in use
    if (b->p != 0) d_.mem_free(b->p);
    *b = Buffer{};
    COLLX_TRY(pc_.check(d_.mem_alloc(&b->p, bytes), "cuMemAlloc"));
    b->bytes = bytes;
    return Status();
  }

#if COLLX_HAVE_CUDA
  Status launched(int cuda_error) const {
    if (cuda_error == 0) return Status();
    return error(COLLX_ERR_TRANSPORT, "CUDA: kernel launch on device %d failed: %s",
                 pc_.device, cuda::error_string(cuda_error));
  }
#endif

  const Driver& d_;
  PrimaryContext pc_;  // declared first among the resources: released last
  void* stream_ = nullptr;
  DeviceUuid uuid_;
  bool mps_ = false;
  Buffer scratch_, chain_, area_;
  size_t area_max_ = 0;
#if COLLX_HAVE_CUDA
  cuda::FlagsHost* host_ = nullptr;  // pinned: written by the one-kernel allreduce
#endif
  void* user_done_ = nullptr;  // recorded on the caller's stream
  std::map<DeviceUuid, bool> reach_;
};

}  // namespace

MemoryQuery* cuda_memory_query(std::string* why) {
  std::call_once(g_once, load);
  if (why != nullptr) *why = g_why;
  return g_query;
}

namespace {

// The driver, or COLLX_ERR_UNSUPPORTED saying why there is none; `what` names the use.
Status need_driver(const char* what, const Driver** out) {
  *out = driver();
  if (*out != nullptr) return Status();
  return error(COLLX_ERR_UNSUPPORTED, "%s without a usable CUDA driver: %s", what,
               g_why.c_str());
}

// A T (CudaCopier, CudaDeviceIpc) on `device`, opened.
template <typename T, typename Base>
Status open_on(int device, const char* what, std::unique_ptr<Base>* out) {
  const Driver* d = nullptr;
  COLLX_TRY(need_driver(what, &d));
  auto t = std::make_unique<T>(*d, device);
  COLLX_TRY(t->open());
  *out = std::move(t);
  return Status();
}

}  // namespace

Status cuda_copier(int device, std::unique_ptr<DeviceCopier>* out) {
  return open_on<CudaCopier>(device, "device memory", out);
}

Status cuda_device_ipc(int device, std::unique_ptr<DeviceIpc>* out) {
  return open_on<CudaDeviceIpc>(device, "CUDA IPC", out);
}

Status cuda_copy(void* dst, const void* src, size_t bytes, int device) {
  const Driver* d = nullptr;
  COLLX_TRY(need_driver("device memory", &d));
  PrimaryContext pc(*d, device);
  COLLX_TRY(pc.open());
  PrimaryContext::Scope scope(pc);
  COLLX_TRY(scope.status);
  return pc.check(d->copy(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                          bytes),
                  "cuMemcpy");
}

Status cuda_stream_synchronize(void* stream) {
  if (stream == nullptr && driver() == nullptr) return Status();  // no driver: nothing queued
  const Driver* d = nullptr;
  COLLX_TRY(need_driver("a CUDA stream", &d));
  const CUresult rc = d->stream_synchronize(stream);
  return rc == 0 ? Status() : failed(*d, rc, "cuStreamSynchronize of the caller's stream", -1);
}

}  // namespace collx
