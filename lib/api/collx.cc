// C ABI: argument validation, status + thread-local error text, handle registry.

#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <utility>

#include "api/status.h"
#include "core/comm.h"
#include "core/context.h"

using collx::Comm;
using collx::Status;
using collx::error;
using collx::report;

struct collx_comm {};  // opaque: a collx_comm_t is a collx::Comm*
struct collx_request {};

namespace {

// Live communicators, so that a destroyed or foreign handle is an error, not a crash.
std::mutex g_comms_mu;
std::unordered_set<const Comm*>& live_comms() {
  static auto* s = new std::unordered_set<const Comm*>();  // never destroyed: safe at exit
  return *s;
}

// In a forked child, the parent's communicators: no longer live there (they would take part
// in the parent's collectives), named in the errors of the calls that pass them.
std::unordered_set<const Comm*>& inherited_comms() {
  static auto* s = new std::unordered_set<const Comm*>();
  return *s;
}

// pthread_atfork's handlers, registered by collx_init: the registry and the context are
// consistent in the child (no lock held by a thread the child does not have).
void before_fork() {
  collx::Context::before_fork();
  g_comms_mu.lock();
}
void after_fork_in_parent() {
  g_comms_mu.unlock();
  collx::Context::after_fork_in_parent();
}
void after_fork_in_child() {
  inherited_comms().merge(live_comms());
  g_comms_mu.unlock();
  collx::Context::after_fork_in_child();
}

// Runs use(comm) under the registry lock, so that a concurrent destroy cannot free the
// communicator meanwhile; use returns a Status.
template <typename F>
Status with_live_comm(collx_comm_t handle, const char* fn, F&& use) {
  auto* c = reinterpret_cast<Comm*>(handle);
  if (handle == nullptr) return error(COLLX_ERR_INVALID_ARG, "%s: comm is NULL", fn);
  std::lock_guard<std::mutex> g(g_comms_mu);
  if (live_comms().count(c) == 0) {
    if (inherited_comms().count(c) != 0) {
      return error(COLLX_ERR_INVALID_ARG,
                   "%s: comm %p was created before this process was forked: a communicator "
                   "serves only the process that created it",
                   fn, static_cast<void*>(handle));
    }
    return error(COLLX_ERR_INVALID_ARG, "%s: comm %p is not a live communicator (destroyed?)", fn,
                 static_cast<void*>(handle));
  }
  return use(*c);
}

// In a forked child, a request the parent started: the parent's to complete (testing it here
// would take part in the parent's collective), whether or not it had completed at the fork
// (which a test cannot tell apart: a caller's request is the parent's either way). Reads
// r->comm only as a key (kept after completion; the communicator may be gone).
Status check_not_inherited(const collx::Request* r, const char* fn) {
  if (!collx::Context::forked_child()) return Status();
  std::lock_guard<std::mutex> g(g_comms_mu);
  if (inherited_comms().count(r->comm) == 0) return Status();
  return error(COLLX_ERR_INVALID_ARG,
               "%s: request %p was started before this process was forked: only the process "
               "that started it can complete it",
               fn, static_cast<const void*>(r));
}

template <typename F>
Status read_comm(collx_comm_t handle, const char* fn, F&& read) {
  return with_live_comm(handle, fn, [&](Comm& c) {
    read(c);
    return Status();
  });
}

// A communicator held by one call, so that a second thread using it at the same time (or
// destroying it) gets an error instead of corrupting its state.
class Claim {
 public:
  Claim() = default;
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  ~Claim() {
    if (c_ != nullptr) c_->release();
  }
  Comm* get() const { return c_; }
  Comm* take() { return std::exchange(c_, nullptr); }  // ownership passes to the caller

 private:
  friend Status claim_comm(collx_comm_t, const char*, Claim*);
  Comm* c_ = nullptr;
};

Status claim_comm(collx_comm_t handle, const char* fn, Claim* out) {
  return with_live_comm(handle, fn, [&](Comm& c) {
    if (!c.try_claim()) {
      return error(COLLX_ERR_INVALID_ARG,
                   "%s: comm %p is in use by another thread (a communicator is used by one "
                   "thread at a time)",
                   fn, static_cast<void*>(handle));
    }
    out->c_ = &c;
    return Status();
  });
}

const char* const kDtypeNames[] = {"int8",    "uint8",    "int16",   "uint16",
                                   "int32",   "uint32",   "int64",   "uint64",
                                   "float16", "bfloat16", "float32", "float64"};
const size_t kDtypeSizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
const char* const kOpNames[] = {"sum", "prod", "min", "max", "avg", "band", "bor", "bxor"};

// Everything collx_allreduce and collx_iallreduce check before touching a byte.
Status validate(const void* sendbuf, void* recvbuf, size_t count, collx_dtype_t dtype,
                collx_op_t op, collx_comm_t handle, const char* fn, Claim* comm,
                collx::AllreduceOp* out) {
  COLLX_TRY(claim_comm(handle, fn, comm));
  collx::Reducer red;
  COLLX_TRY(collx::make_reducer(dtype, op, &red));
  if (count > SIZE_MAX / red.elem_size / 2) {
    return error(COLLX_ERR_INVALID_ARG, "%s: count %zu of %s overflows the address space", fn,
                 count, collx_dtype_name(dtype));
  }
  const bool in_place = sendbuf == COLLX_IN_PLACE || sendbuf == recvbuf;
  const void* send = in_place ? recvbuf : sendbuf;
  if (count > 0 && recvbuf == nullptr) {
    return error(COLLX_ERR_INVALID_ARG, "%s: recvbuf is NULL with count %zu", fn, count);
  }
  if (count > 0 && recvbuf == COLLX_IN_PLACE) {
    return error(COLLX_ERR_INVALID_ARG,
                 "%s: recvbuf is COLLX_IN_PLACE with count %zu (only sendbuf may be)", fn, count);
  }
  if (count > 0 && send == nullptr) {
    return error(COLLX_ERR_INVALID_ARG, "%s: sendbuf is NULL with count %zu", fn, count);
  }
  const size_t bytes = count * red.elem_size;
  const auto s = reinterpret_cast<uintptr_t>(send), r = reinterpret_cast<uintptr_t>(recvbuf);
  if (!in_place && count > 0 && s < r + bytes && r < s + bytes) {
    return error(COLLX_ERR_INVALID_ARG,
                 "%s: sendbuf and recvbuf overlap partially (%zu bytes apart, %zu bytes each); "
                 "use COLLX_IN_PLACE for in-place",
                 fn, s > r ? s - r : r - s, bytes);
  }
  *out = collx::AllreduceOp{send, recvbuf, count, red, dtype, op};
  if (count > 0) COLLX_TRY(comm->get()->check_memory(send, recvbuf, bytes, fn, out));
  return Status();
}

// Shuts c down (a collective step) and frees it. A failed communicator, or a shutdown that
// fails (its peers gone, or no memory for the profile's report), still frees everything, and
// says why.
Status close_comm(Comm* c, const char* fn) {
  Status st;
  try {
    st = c->shutdown();
  } catch (...) {
    st = collx::exception_status(fn);
  }
  delete c;
  return st;
}

// Every entry point runs its body through this: an exception (std::bad_alloc where a
// container of the library's finds no memory) becomes the call's status and message instead
// of ending the process. On the hot path it costs nothing (nothing there allocates or throws).
template <typename F>
collx_status_t guarded(const char* fn, F&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return report(collx::exception_status(fn));
  }
}

}  // namespace

extern "C" {

const char* collx_strerror(collx_status_t status) { return collx::status_name(status); }

const char* collx_version_string(void) {
  return "libcollx 0.1.0";
}

const char* collx_dtype_name(collx_dtype_t dtype) {
  const auto i = static_cast<unsigned>(dtype);
  return i < COLLX_DTYPE_COUNT ? kDtypeNames[i] : "invalid-dtype";
}

size_t collx_dtype_size(collx_dtype_t dtype) {
  const auto i = static_cast<unsigned>(dtype);
  return i < COLLX_DTYPE_COUNT ? kDtypeSizes[i] : 0;
}

const char* collx_op_name(collx_op_t op) {
  const auto i = static_cast<unsigned>(op);
  return i < COLLX_OP_COUNT ? kOpNames[i] : "invalid-op";
}

collx_status_t collx_init(void) {
  return guarded("collx_init", [] {
    static const int atfork =
        pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    if (atfork != 0) {
      return report(error(COLLX_ERR_NO_MEMORY, "collx_init: pthread_atfork failed (%d)", atfork));
    }
    return report(collx::Context::init());
  });
}

collx_status_t collx_finalize(void) {
  return guarded("collx_finalize", [] { return report(collx::Context::finalize()); });
}

collx_status_t collx_comm_create(const collx_comm_params_t* params, collx_comm_t* comm) {
  return guarded("collx_comm_create", [&] {
    if (comm == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_comm_create: comm is NULL"));
    }
    *comm = nullptr;
    if (params == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_comm_create: params is NULL"));
    }
    if (params->size < 1 || params->rank < 0 || params->rank >= params->size) {
      return report(error(COLLX_ERR_INVALID_ARG,
                          "collx_comm_create: rank %d / size %d is invalid", params->rank,
                          params->size));
    }
    if (params->allgather == nullptr) {
      return report(
          error(COLLX_ERR_INVALID_ARG, "collx_comm_create: allgather callback is NULL"));
    }
    Comm* c = nullptr;
    // Registered before the members confirm the creation (no memory for it: none keeps it).
    const Status st = Comm::create(*params, &c, [](Comm* made, bool in) {
      std::lock_guard<std::mutex> g(g_comms_mu);
      if (in) live_comms().insert(made);
      else live_comms().erase(made);
    });
    if (st.ok()) *comm = reinterpret_cast<collx_comm_t>(c);
    return report(st);
  });
}

collx_status_t collx_comm_destroy(collx_comm_t handle) {
  return guarded("collx_comm_destroy", [&] {
    Claim claim;
    Status st = claim_comm(handle, "collx_comm_destroy", &claim);
    if (!st.ok()) return report(st);
    Comm* c = claim.take();
    {
      std::lock_guard<std::mutex> g(g_comms_mu);
      live_comms().erase(c);
    }
    return report(close_comm(c, "collx_comm_destroy"));
  });
}

collx_status_t collx_comm_rank(collx_comm_t handle, int* rank) {
  return guarded("collx_comm_rank", [&] {
    if (rank == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_comm_rank: rank is NULL"));
    }
    return report(read_comm(handle, "collx_comm_rank", [&](const Comm& c) { *rank = c.rank(); }));
  });
}

collx_status_t collx_comm_size(collx_comm_t handle, int* size) {
  return guarded("collx_comm_size", [&] {
    if (size == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_comm_size: size is NULL"));
    }
    return report(read_comm(handle, "collx_comm_size", [&](const Comm& c) { *size = c.size(); }));
  });
}

collx_status_t collx_comm_node(collx_comm_t handle, collx_comm_node_t* node) {
  return guarded("collx_comm_node", [&] {
    if (node == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_comm_node: node is NULL"));
    }
    return report(read_comm(handle, "collx_comm_node", [&](const Comm& c) { *node = c.node(); }));
  });
}

collx_status_t collx_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                               collx_dtype_t dtype, collx_op_t op, collx_comm_t handle) {
  return guarded("collx_allreduce", [&] {
    Claim c;
    collx::AllreduceOp a;
    Status st = validate(sendbuf, recvbuf, count, dtype, op, handle, "collx_allreduce", &c, &a);
    if (st.ok()) st = c.get()->allreduce(a);
    return report(st);
  });
}

collx_status_t collx_allreduce_stream(const void* sendbuf, void* recvbuf, size_t count,
                                      collx_dtype_t dtype, collx_op_t op, collx_comm_t handle,
                                      struct CUstream_st* stream) {
  return guarded("collx_allreduce_stream", [&] {
    Claim c;
    collx::AllreduceOp a;
    Status st =
        validate(sendbuf, recvbuf, count, dtype, op, handle, "collx_allreduce_stream", &c, &a);
    a.on_stream = true;
    a.stream = stream;
    if (st.ok()) st = c.get()->allreduce(a);
    return report(st);
  });
}

collx_status_t collx_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                                collx_dtype_t dtype, collx_op_t op, collx_comm_t handle,
                                collx_request_t* request) {
  return guarded("collx_iallreduce", [&] {
    if (request == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_iallreduce: request is NULL"));
    }
    *request = nullptr;
    Claim c;
    collx::AllreduceOp a;
    Status st = validate(sendbuf, recvbuf, count, dtype, op, handle, "collx_iallreduce", &c, &a);
    collx::Request* r = nullptr;
    if (st.ok()) st = c.get()->iallreduce(a, &r);
    if (st.ok()) *request = reinterpret_cast<collx_request_t>(r);
    return report(st);
  });
}

collx_status_t collx_test(collx_request_t* request) {
  return guarded("collx_test", [&] {
    if (request == nullptr || *request == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_test: request is NULL"));
    }
    auto* r = reinterpret_cast<collx::Request*>(*request);
    const Status inherited = check_not_inherited(r, "collx_test");
    if (!inherited.ok()) return report(inherited);
    if (!r->done.load(std::memory_order_acquire)) {
      // Runs it here once every rank has started it, or starts it later.
      const bool yield = Comm::nudge(r);
      if (!r->done.load(std::memory_order_acquire)) {
        // A thread running an operation gets a core: a caller that polls in a loop would
        // otherwise keep it waiting for a scheduler tick (milliseconds) wherever threads
        // outnumber cores.
        if (yield) sched_yield();
        return COLLX_IN_PROGRESS;
      }
    }
    Status st = std::move(r->result);
    delete r;
    *request = nullptr;
    return report(st);
  });
}

collx_status_t collx_wait(collx_request_t* request) {
  return guarded("collx_wait", [&] {
    if (request == nullptr || *request == nullptr) {
      return report(error(COLLX_ERR_INVALID_ARG, "collx_wait: request is NULL"));
    }
    auto* r = reinterpret_cast<collx::Request*>(*request);
    const Status inherited = check_not_inherited(r, "collx_wait");
    if (!inherited.ok()) return report(inherited);
    // Runs the operation on this thread if it has not started; each is bounded by its deadline.
    collx::Comm::wait(r);
    return collx_test(request);
  });
}

const char* collx_comm_algorithm(collx_comm_t handle, size_t bytes) {
  const char* name = nullptr;
  (void)guarded("collx_comm_algorithm", [&] {
    return report(read_comm(handle, "collx_comm_algorithm", [&](const Comm& c) {
      name = collx::algo_name(c.selection().pick(bytes));
    }));
  });
  return name;
}

}  // extern "C"
