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

using InitFn = CUresult (*)(unsigned);
using DeviceCountFn = CUresult (*)(int*);
using GetAttributesFn = CUresult (*)(unsigned, int*, void**, CUdeviceptr);
using GetAttributeFn = CUresult (*)(void*, int, CUdeviceptr);

class CudaDriverQuery final : public MemoryQuery {
 public:
  CudaDriverQuery(GetAttributesFn attrs, GetAttributeFn attr) : attrs_(attrs), attr_(attr) {}

  bool describe(const void* p, MemRange* out) override {
    unsigned type = 0, managed = 0;
    int device = -1;
    unsigned long long id = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    int which[] = {kAttrMemoryType, kAttrIsManaged, kAttrDevice, kAttrBufferId,
                   kAttrRangeStart, kAttrRangeSize};
    void* data[] = {&type, &managed, &device, &id, &start, &size};
    if (attrs_(6, which, data, reinterpret_cast<CUdeviceptr>(p)) != 0) return false;
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
    return attr_(&id, kAttrBufferId, reinterpret_cast<CUdeviceptr>(p)) == 0 ? id : 0;
  }

 private:
  GetAttributesFn attrs_;
  GetAttributeFn attr_;
};

std::once_flag g_once;
CudaDriverQuery* g_query = nullptr;  // lives as long as the process (the library stays loaded)
std::string g_why;

void load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    g_why = "no CUDA driver (libcuda.so.1 not found)";
    return;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<DeviceCountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto attrs = reinterpret_cast<GetAttributesFn>(dlsym(lib, "cuPointerGetAttributes"));
  auto attr = reinterpret_cast<GetAttributeFn>(dlsym(lib, "cuPointerGetAttribute"));
  int devices = 0;
  if (init == nullptr || count == nullptr || attrs == nullptr || attr == nullptr) {
    g_why = "CUDA driver lacks the pointer-attribute API";
  } else if (init(0) != 0) {
    g_why = "CUDA driver present, cuInit failed (no usable GPU)";
  } else if (count(&devices) != 0 || devices == 0) {
    g_why = "CUDA driver present, no CUDA device";
  } else {
    g_query = new CudaDriverQuery(attrs, attr);
    g_why = "CUDA driver, " + std::to_string(devices) + " device(s)";
    return;
  }
  dlclose(lib);
}

}  // namespace

MemoryQuery* cuda_memory_query(std::string* why) {
  std::call_once(g_once, load);
  if (why != nullptr) *why = g_why;
  return g_query;
}

}  // namespace collx
