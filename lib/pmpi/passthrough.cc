// Calls libcollx does not serve, to the MPI library, which may not be CUDA-aware: device
// buffers go through host copies (memory/host_mirror.h).
#include <cstdio>
#include <cstring>

#include "memory/cuda_driver.h"
#include "pmpi/preload.h"

namespace collx_mpi {

std::atomic<long long> g_copied[kFnCount] = {};

namespace {

std::atomic<HostCopiesOf> g_of{kNoBuffers};

// Host copies that failed (a CUDA error): said on stderr, and MPI_ERR_OTHER through the
// communicator's error handler.
int copy_failed(Fn fn, const char* why, MPI_Comm comm) {
  std::fprintf(stderr, "libcollx_mpi: %s of device buffers failed: %s\n", kFnNames[fn], why);
  PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

// COLLX_MPI_HOST_COPIES=1: every buffer is "device memory" of no device, copied by memcpy.
struct EveryBufferCopied : collx::MemoryQuery {
  bool describe(const void* p, collx::MemRange* out) override {
    out->kind = collx::MemKind::kDevice;
    out->base = reinterpret_cast<uintptr_t>(p);
    return true;
  }
  uint64_t buffer_id(const void*) override { return 0; }
};
collx::Status host_copy(void* dst, const void* src, size_t bytes, int) {
  std::memcpy(dst, src, bytes);
  return collx::Status();
}

// What decides which buffers go through host copies: those it calls device memory (none
// without one: libcollx not started).
collx::MemoryQuery* copies_query() {
  static EveryBufferCopied every_buffer;
  const HostCopiesOf of = g_of.load(std::memory_order_relaxed);
  return of == kNoBuffers    ? nullptr
         : of == kAllBuffers ? &every_buffer
                             : collx::cuda_memory_query();
}
collx::SyncCopy copier() {
  return g_of.load(std::memory_order_relaxed) == kAllBuffers ? host_copy : collx::cuda_copy;
}

// A call libcollx does not serve goes to the MPI library, which may not be CUDA-aware: device
// buffers go through host copies of the datatype's extent (the bytes between its true lower
// bound and its true upper bound over `count` elements), made here in *h. A datatype laid out
// backwards (negative extent) keeps the buffers as they are. A failure is said on stderr and
// goes through the communicator's error handler. Buffers MPI rejects are not copied. The
// extent copied is *copied, if asked.
int copy_in(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
            MPI_Comm comm, collx::HostCopies* h, collx::Extent* copied = nullptr) {
  collx::MemoryQuery* q = copies_query();
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  collx::Extent e;
  if (q != nullptr && count > 0 && !mpi_rejects(sendbuf, recvbuf, count) &&
      PMPI_Type_get_extent(datatype, &lb, &extent) == MPI_SUCCESS &&
      PMPI_Type_get_true_extent(datatype, &true_lb, &true_extent) == MPI_SUCCESS && extent >= 0 &&
      true_extent >= 0) {
    e = {true_lb, static_cast<size_t>(true_extent) +
                      static_cast<size_t>(count - 1) * static_cast<size_t>(extent)};
  }
  if (copied != nullptr) *copied = e;
  const collx::Status st = h->copy_in(q, copier(), sendbuf, recvbuf, MPI_IN_PLACE, e);
  if (h->any()) g_copied[fn].fetch_add(1, std::memory_order_relaxed);
  return st.ok() ? MPI_SUCCESS : copy_failed(fn, st.message().c_str(), comm);
}

}  // namespace

void set_host_copies(HostCopiesOf of) { g_of.store(of, std::memory_order_relaxed); }

bool needs_host_copies(const void* sendbuf, const void* recvbuf, MPI_Count count) {
  collx::MemoryQuery* q = copies_query();
  if (q == nullptr || count <= 0 || mpi_rejects(sendbuf, recvbuf, count)) return false;
  int device = -1;
  return (sendbuf != MPI_IN_PLACE && collx::device_memory(q, sendbuf, &device)) ||
         collx::device_memory(q, recvbuf, &device);
}

// The MPI library's own MPI_Allreduce (fn kAllreduce) or MPI_Allreduce_c (kAllreduceC), on
// host copies of device buffers.
int pmpi_allreduce(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  collx::HostCopies h;
  const int rc = copy_in(fn, sendbuf, recvbuf, count, datatype, comm, &h);
  if (rc != MPI_SUCCESS) return rc;
  const int mpi_rc = fn == kAllreduceC
                         ? PMPI_Allreduce_c(h.send(), h.recv(), count, datatype, op, comm)
                         : PMPI_Allreduce(h.send(), h.recv(), static_cast<int>(count), datatype,
                                          op, comm);
  const collx::Status st = h.copy_back();
  return st.ok() ? mpi_rc : copy_failed(fn, st.message().c_str(), comm);
}

// The MPI library's own MPI_Iallreduce (fn kIallreduce) or MPI_Iallreduce_c (kIallreduceC),
// on host copies of device buffers. With copies, MPI's request goes behind one of ours, which
// copies the result back when the operation completes (requests.cc).
int pmpi_iallreduce(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  auto h = std::make_shared<collx::HostCopies>();
  // (a null request is MPI's own error, and needs no copies)
  const int rc =
      copy_in(fn, sendbuf, recvbuf, request == nullptr ? 0 : count, datatype, comm, h.get());
  if (rc != MPI_SUCCESS) {
    *request = MPI_REQUEST_NULL;
    return rc;
  }
  const auto mpi_iallreduce = [&](const void* send, void* recv, MPI_Request* req) {
    return fn == kIallreduceC
               ? PMPI_Iallreduce_c(send, recv, count, datatype, op, comm, req)
               : PMPI_Iallreduce(send, recv, static_cast<int>(count), datatype, op, comm, req);
  };
  if (!h->any()) return mpi_iallreduce(sendbuf, recvbuf, request);
  MPI_Request inner = MPI_REQUEST_NULL;
  const int mpi_rc = mpi_iallreduce(h->send(), h->recv(), &inner);
  if (mpi_rc != MPI_SUCCESS) {
    *request = MPI_REQUEST_NULL;
    return mpi_rc;
  }
  return start_copied_request(fn, inner, std::move(h), request);
}

// The MPI library's own MPI_Allreduce_init (fn kAllreduceInit) or MPI_Allreduce_init_c
// (kAllreduceInitC), on host copies of device buffers: MPI's persistent request is made on the
// copies, which each MPI_Start makes again (recopy) and each completion copies back
// (persistent.cc).
int pmpi_allreduce_init(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                        MPI_Request* request) {
  auto h = std::make_shared<collx::HostCopies>();
  collx::Extent e;
  const int rc =
      copy_in(fn, sendbuf, recvbuf, request == nullptr ? 0 : count, datatype, comm, h.get(), &e);
  if (rc != MPI_SUCCESS) {
    if (request != nullptr) *request = MPI_REQUEST_NULL;
    return rc;
  }
  const auto mpi_init = [&](const void* send, void* recv) {
    return fn == kAllreduceInitC
               ? PMPI_Allreduce_init_c(send, recv, count, datatype, op, comm, info, request)
               : PMPI_Allreduce_init(send, recv, static_cast<int>(count), datatype, op, comm,
                                     info, request);
  };
  if (!h->any()) return mpi_init(sendbuf, recvbuf);
  const int mpi_rc = mpi_init(h->send(), h->recv());
  if (mpi_rc == MPI_SUCCESS) {
    add_copied_persistent(*request, fn, sendbuf, recvbuf, e, std::move(h));
  }
  return mpi_rc;
}

int recopy(Fn fn, const void* sendbuf, void* recvbuf, collx::Extent e, const void* made_send,
           const void* made_recv, collx::HostCopies* h) {
  const collx::Status st =
      h->copy_in(copies_query(), copier(), sendbuf, recvbuf, MPI_IN_PLACE, e);
  if (!st.ok()) return copy_failed(fn, st.message().c_str(), MPI_COMM_WORLD);
  if (h->send() != made_send || h->recv() != made_recv) {
    return copy_failed(fn, "its buffers are no longer the device memory they were at the init",
                       MPI_COMM_WORLD);
  }
  return MPI_SUCCESS;
}

int copy_back(Fn fn, collx::HostCopies* h) {
  const collx::Status st = h->copy_back();
  return st.ok() ? MPI_SUCCESS : copy_failed(fn, st.message().c_str(), MPI_COMM_WORLD);
}

}  // namespace collx_mpi
