// Inside the driver-backed memory code (cuda_driver.cc, cuda_copier.cc, cuda_device_ipc.cc):
// the CUDA driver's entry points, looked up at run time once, and a device's primary context.
// Nothing outside lib/memory/ includes this; the rest of the library sees cuda_driver.h.
#pragma once

#include <cstddef>
#include <memory>

#include "api/status.h"
#include "memory/device_ipc.h"

namespace collx {

// The few driver API values libcollx uses, as cuda.h defines them (stable ABI since CUDA 4/7).
using CUresult = int;
using CUdeviceptr = unsigned long long;
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
  CUresult (*host_register)(void*, size_t, unsigned);
  CUresult (*host_unregister)(void*);
  CUresult (*host_device_pointer)(CUdeviceptr*, void*, unsigned);
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

// The loaded driver, or null where there is none (cuda_memory_query says why).
const Driver* cuda_driver();
// The driver, or COLLX_ERR_UNSUPPORTED saying why there is none; `what` names the use.
Status need_driver(const char* what, const Driver** out);
// The driver's text for an error code.
const char* driver_text(const Driver& d, CUresult rc);
// COLLX_ERR_TRANSPORT naming the call, the device and the driver's error.
Status driver_failed(const Driver& d, CUresult rc, const char* what, int device);

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
    if (rc != 0) return driver_failed(d, rc, "cuDeviceGet", device);
    rc = d.primary_retain(&ctx, cu_device);
    if (rc != 0) {
      ctx = nullptr;
      return driver_failed(d, rc, "cuDevicePrimaryCtxRetain", device);
    }
    return Status();
  }

  Status check(CUresult rc, const char* what) const {
    return rc == 0 ? Status() : driver_failed(d, rc, what, device);
  }

  struct Scope {
    explicit Scope(const PrimaryContext& c) : c(c) {
      const CUresult rc = c.ctx != nullptr ? c.d.ctx_push(c.ctx) : 201;  // INVALID_CONTEXT
      if (rc != 0) status = driver_failed(c.d, rc, "cuCtxPushCurrent", c.device);
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

}  // namespace collx
