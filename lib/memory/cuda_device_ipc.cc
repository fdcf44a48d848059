// The CUDA IPC allreduce's device over the CUDA driver (memory/device_ipc.h).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "collx_build_config.h"
#include "memory/cuda_driver.h"
#include "memory/cuda_driver_api.h"
#if COLLX_HAVE_CUDA
#include "cuda/flags.h"
#include "cuda/reduce.h"
static_assert(collx::cuda::kFlagsMaxRanks == collx::kFlagsMaxRanks);
#endif

namespace collx {

namespace {

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
    for (void* p : registered_) d_.host_unregister(p);
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

  DeviceUuid uuid() const override {
    return uuid_;
  }
  bool mps() const override {
    return mps_;
  }

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
      return error(
          COLLX_ERR_TRANSPORT,
          "CUDA driver: cuIpcOpenMemHandle of rank %d's buffer (device %d) failed: %s (%d)", peer,
          pc_.device, driver_text(d_, rc), rc);
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

  // The range, widened to whole pages (registration pins pages), registered once.
  Status map_host(void* host, size_t bytes, void** device) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(host) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(host) + bytes + page - 1) / page * page;
    void* base = reinterpret_cast<void*>(begin);
    constexpr unsigned kPortableMapped = 0x01 | 0x02;  // CU_MEMHOSTREGISTER_PORTABLE|DEVICEMAP
    registered_.reserve(registered_.size() + 1);  // may throw: before there is anything to undo
    COLLX_TRY(pc_.check(d_.host_register(base, end - begin, kPortableMapped),
                        "cuMemHostRegister of the node's shared memory"));
    registered_.push_back(base);
    CUdeviceptr p = 0;
    COLLX_TRY(pc_.check(d_.host_device_pointer(&p, base, 0), "cuMemHostGetDevicePointer"));
    *device = reinterpret_cast<void*>(p + (reinterpret_cast<uintptr_t>(host) - begin));
    return Status();
  }

  Status copy_to_host(void* host, const void* device_src, size_t bytes) override {
    Scope scope(pc_);
    COLLX_TRY(scope.status);
    return pc_.check(
        d_.copy_to_host(host, reinterpret_cast<CUdeviceptr>(device_src), bytes, stream_),
        "cuMemcpyDtoHAsync");
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
      return error(COLLX_ERR_INVALID_ARG, "flag area of %zu bytes asked for, %zu made", max_bytes,
                   area_max_);
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
      COLLX_TRY(
          pc_.check(d_.event_record(user_done_, c.stream), "cuEventRecord on the caller's stream"));
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
  // checks the deadline: the kernel's own waits give up after c.timeout_s. Once per
  // millisecond it runs the caller's progress, as the transport's waits do (a peer may need
  // it before it can launch its kernel).
  Status wait_done(const FlagsCall& c) {
    constexpr CUresult kNotReady = 600;  // CUDA_ERROR_NOT_READY
    const auto start = std::chrono::steady_clock::now();
    const volatile uint64_t* done = &host_->done;
    double progress_at = 1e-3;  // seconds waited
    for (uint64_t polls = 1; *done != c.seq; ++polls) {
      if (polls % 64 != 0) continue;
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited * 1e6 < c.spin_us) continue;
      if (waited >= progress_at && c.progress != nullptr) {
        c.progress();
        progress_at = waited + 1e-3;
      }
      const CUresult rc = d_.stream_query(stream_);
      if (rc == 0) return Status();
      if (rc != kNotReady) return pc_.check(rc, "the one-kernel allreduce (cuStreamQuery)");
      if (waited > c.timeout_s + 10) {
        return error(COLLX_ERR_TIMEOUT,
                     "the one-kernel allreduce on device %d did not end within %g s", pc_.device,
                     waited);
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
    return error(COLLX_ERR_TRANSPORT, "CUDA: kernel launch on device %d failed: %s", pc_.device,
                 cuda::error_string(cuda_error));
  }
#endif

  const Driver& d_;
  PrimaryContext pc_;  // declared first among the resources: released last
  void* stream_ = nullptr;
  DeviceUuid uuid_;
  bool mps_ = false;
  Buffer scratch_, chain_, area_;
#if COLLX_HAVE_CUDA
  size_t area_max_ = 0;
  cuda::FlagsHost* host_ = nullptr;  // pinned: written by the one-kernel allreduce
#endif
  void* user_done_ = nullptr;  // recorded on the caller's stream
  std::map<DeviceUuid, bool> reach_;
  std::vector<void*> registered_;  // map_host's ranges (page-aligned starts)
};

}  // namespace

Status cuda_device_ipc(int device, std::unique_ptr<DeviceIpc>* out) {
  return open_on<CudaDeviceIpc>(device, "CUDA IPC", out);
}

}  // namespace collx
