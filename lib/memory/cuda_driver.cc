// The CUDA driver, loaded at run time (memory/cuda_driver.h), and the pointer queries of the
// pointer cache over it. Host staging's copies are in cuda_copier.cc, the CUDA IPC device in
// cuda_device_ipc.cc.
#include "memory/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "memory/cuda_driver_api.h"

namespace collx {

namespace {

// The pointer attributes the pointer cache asks for, as cuda.h defines them.
constexpr int kAttrMemoryType = 2;          // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttrBufferId = 7;            // CU_POINTER_ATTRIBUTE_BUFFER_ID
constexpr int kAttrIsManaged = 8;           // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kAttrDevice = 9;              // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr int kAttrRangeStart = 11;         // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
constexpr int kAttrRangeSize = 12;          // CU_POINTER_ATTRIBUTE_RANGE_SIZE
constexpr unsigned kMemoryTypeDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr unsigned kMemoryTypeUnified = 4;  // CU_MEMORYTYPE_UNIFIED

class CudaDriverQuery final : public MemoryQuery {
 public:
  explicit CudaDriverQuery(const Driver& d) : d_(d) {}

  bool describe(const void* p, MemRange* out) override {
    unsigned type = 0, managed = 0;
    int device = -1;
    unsigned long long id = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    int which[] = {kAttrMemoryType, kAttrIsManaged,  kAttrDevice,
                   kAttrBufferId,   kAttrRangeStart, kAttrRangeSize};
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
    return d_.pointer_attribute(&id, kAttrBufferId, reinterpret_cast<CUdeviceptr>(p)) == 0 ? id : 0;
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
      find(lib, "cuMemHostRegister_v2", &d.host_register) &&
      find(lib, "cuMemHostUnregister", &d.host_unregister) &&
      find(lib, "cuMemHostGetDevicePointer_v2", &d.host_device_pointer) &&
      find(lib, "cuMemcpyDtoHAsync_v2", &d.copy_to_host) &&
      find(lib, "cuMemcpyHtoDAsync_v2", &d.copy_to_device) &&
      find(lib, "cuMemcpyDtoDAsync_v2", &d.copy_device) && find(lib, "cuMemcpy", &d.copy) &&
      find(lib, "cuMemsetD8Async", &d.memset_async) && find(lib, "cuMemAlloc_v2", &d.mem_alloc) &&
      find(lib, "cuMemFree_v2", &d.mem_free) && find(lib, "cuIpcGetMemHandle", &d.ipc_get) &&
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

}  // namespace

const Driver* cuda_driver() {
  std::call_once(g_once, load);
  return g_query != nullptr ? &g_driver : nullptr;
}

const char* driver_text(const Driver& d, CUresult rc) {
  const char* text = nullptr;
  if (d.error_string(rc, &text) != 0 || text == nullptr) text = "unknown error";
  return text;
}

Status driver_failed(const Driver& d, CUresult rc, const char* what, int device) {
  return error(COLLX_ERR_TRANSPORT, "CUDA driver: %s (device %d) failed: %s (%d)", what, device,
               driver_text(d, rc), rc);
}

Status need_driver(const char* what, const Driver** out) {
  *out = cuda_driver();
  if (*out != nullptr) return Status();
  return error(COLLX_ERR_UNSUPPORTED, "%s without a usable CUDA driver: %s", what, g_why.c_str());
}

MemoryQuery* cuda_memory_query(std::string* why) {
  std::call_once(g_once, load);
  if (why != nullptr) *why = g_why;
  return g_query;
}

Status cuda_copy(void* dst, const void* src, size_t bytes, int device) {
  const Driver* d = nullptr;
  COLLX_TRY(need_driver("device memory", &d));
  PrimaryContext pc(*d, device);
  COLLX_TRY(pc.open());
  PrimaryContext::Scope scope(pc);
  COLLX_TRY(scope.status);
  return pc.check(
      d->copy(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes),
      "cuMemcpy");
}

Status cuda_stream_synchronize(void* stream) {
  if (stream == nullptr && cuda_driver() == nullptr) return Status();  // no driver: nothing queued
  const Driver* d = nullptr;
  COLLX_TRY(need_driver("a CUDA stream", &d));
  const CUresult rc = d->stream_synchronize(stream);
  return rc == 0 ? Status()
                 : driver_failed(*d, rc, "cuStreamSynchronize of the caller's stream", -1);
}

}  // namespace collx
