// What the parts of libcollx_mpi.so share: the functions it serves, their statistics
// (stats.cc), the libcollx communicators (comms.cc), the datatype and op mapping (types.cc), the
// generalized requests of a served MPI_Iallreduce (requests.cc), and the served persistent
// allreduces (persistent.cc). collx_mpi.cc and completion.cc hold the MPI functions
// themselves.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <new>

#include "collx/collx.h"
#include "memory/host_mirror.h"
#include "pmpi/exports.h"
#include "transport/transport.h"

namespace collx_mpi {

// The functions the preload serves. A large-count one (_c) takes an MPI_Count, and passes
// through to its own PMPI twin.
enum Fn {
  kAllreduce,
  kIallreduce,
  kAllreduceC,
  kIallreduceC,
  kAllreduceInit,
  kAllreduceInitC,
  kFnCount
};
extern const char* const kFnNames[kFnCount];

// stats.cc: the statistics printed at MPI_Finalize with COLLX_MPI_VERBOSE=1. Why a call went
// as it did:
enum Reason {
  kServed,
  kArgs,            // buffers MPI rejects (mpi_rejects), a null request: MPI's own error
  kDisabled,        // COLLX_MPI=0
  kNotReady,        // collx_init or the configuration failed
  kIntercomm,
  kDatatype,        // not a predefined type with an exact libcollx equivalent
  kOp,              // user-defined, logical, MAXLOC/MINLOC, or not defined for the type
  kCommFailed,      // libcollx could not create or use a communicator for it
  kReasonCount
};
// The counts of one function. Atomic: under MPI_THREAD_MULTIPLE calls come from several
// threads at once.
struct Counts {
  std::atomic<long long> calls[kReasonCount] = {};
  std::atomic<long long> failed{0};  // served calls that returned an error (in calls[kServed])
};
extern Counts g_counts[kFnCount];
extern bool g_thread_multiple;  // set once, in start(): MPI_THREAD_MULTIPLE was provided
// One more call in `c` (inline: every intercepted call counts itself): without
// MPI_THREAD_MULTIPLE a plain increment (no locked instruction on the fast path), with it an
// atomic one.
inline void tally(std::atomic<long long>& c) {
  if (g_thread_multiple) c.fetch_add(1, std::memory_order_relaxed);
  else c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
inline void count_call(Fn fn, Reason why) { tally(g_counts[fn].calls[why]); }
// A served call of `fn` that failed: counted, and said on stderr (libcollx's message).
void report_failure(Fn fn, const char* context = "");
// The MPI error class of a libcollx error: MPI_ERR_NO_MEM for memory that ran out, else
// MPI_ERR_OTHER.
inline int mpi_error(collx_status_t st) {
  return st == COLLX_ERR_NO_MEMORY ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
}

// Memory that runs out in the preload's own code is the call's error, not the process's end:
// every intercepted function runs its body through guarded(), which turns an exception leaving
// it into MPI's error (std::bad_alloc: MPI_ERR_NO_MEM, any other: MPI_ERR_INTERN), said on
// stderr and passed to comm's error handler (fatal by default, as MPI's own). A request
// argument, if any, becomes MPI_REQUEST_NULL. Where the preload throws after it started
// something (an operation posted, MPI's request made), it ends or frees that first: an error
// leaves no operation running. MPI's callbacks into the preload (generalized requests,
// attribute deletion) allocate nothing.
int exception_error(const char* fn, MPI_Comm comm);  // (in a catch block)
template <typename Body>
int guarded(const char* fn, MPI_Comm comm, MPI_Request* request, Body&& body) {
  try {
    return body();
  } catch (...) {
    if (request != nullptr) *request = MPI_REQUEST_NULL;
    return exception_error(fn, comm);
  }
}
// At MPI_Finalize, collective over MPI_COMM_WORLD: rank 0 prints the sums.
void print_statistics();

// MPI's progress rule: a call that blocks still progresses the program's other MPI
// operations. A served call that waits inside libcollx runs the MPI library's progress (an
// MPI_Iprobe that matches nothing it keeps) once per millisecond of waiting (once per watch
// period where it sleeps while the communicator's worker runs the operation: 10 ms where the
// node's ranks outnumber its CPUs, core/comm.h): an MPI_Isend posted before MPI_Allreduce may
// be what its receiver waits for before it calls MPI_Allreduce.
// An MpiProgress sets it as this thread's outer progress for its scope.
class MpiProgress {
 public:
  MpiProgress() : before_(collx::set_outer_progress(progress)) {}
  ~MpiProgress() { collx::set_outer_progress(before_); }
  MpiProgress(const MpiProgress&) = delete;
  MpiProgress& operator=(const MpiProgress&) = delete;

  static void progress() {  // one step of MPI's progress
    int flag = 0;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }

 private:
  collx::OuterProgress before_;
};

// comms.cc: the libcollx communicator of each MPI communicator served, created by the first
// served call on it (collective) and freed in the program's MPI_Comm_free or at MPI_Finalize.
// At start, before any served call; `from_init`: in MPI_Init or MPI_Init_thread, where every
// process of MPI_COMM_WORLD calls it, so that it may count the machine's processes (below).
void start_comms(bool from_init);
collx_comm_t collx_for(MPI_Comm comm);  // created on first use; null if it cannot serve
void release(MPI_Comm comm);            // MPI_Comm_free (C, and mpi_f08's): frees comm's now
void finish_comms();                    // MPI_Finalize: frees those left, in an agreed order
extern std::atomic<long long> g_free_failed;  // frees that failed (COLLX_MPI_VERBOSE)
// For COLLX_MPI_VERBOSE: the libcollx communicators made, and those of them whose threads
// watch every 10 ms (collx::kCrowdedWatch: more processes on their machine than its CPUs);
// MPI_COMM_WORLD's processes on this machine, counted in MPI_Init (0 where it was not: the
// preload started in another call).
extern std::atomic<long long> g_comms_made, g_comms_crowded;
extern int g_machine_processes;

// types.cc: the predefined datatypes and ops the preload serves. A type's kind decides which
// ops MPI defines for it.
// kByte: MPI_BYTE, bitwise ops only. kComplex: two elements of a floating type, MPI_SUM only.
enum Kind { kSigned, kUnsigned, kFloat, kByte, kComplex };
void load_types();  // reads the types' sizes from the MPI library (once, at start)
// The libcollx type and kind of `t`, if the preload serves it. An element of a complex `t` is
// two of the libcollx type.
bool to_dtype(MPI_Datatype t, collx_dtype_t* d, Kind* kind);
// MPI's table of ops by type: bitwise ops on integers and bytes, the others on real numbers,
// MPI_SUM on complex ones.
bool to_op(MPI_Op op, Kind kind, collx_op_t* o);

// passthrough.cc: the calls libcollx does not serve go to the MPI library's own functions
// (fn: which one), with host copies of the buffers that start() allows: none (libcollx not
// started: the buffers' kinds cannot be asked), those in device memory (the default), or all
// (COLLX_MPI_HOST_COPIES=1, a test of that path without a GPU). A non-blocking one on host
// copies is behind a request of ours (start_copied_request). g_copied counts the calls on
// host copies (COLLX_MPI_VERBOSE).
enum HostCopiesOf { kNoBuffers, kDeviceBuffers, kAllBuffers };
// Buffer arguments MPI rejects with a predefined datatype (MPICH's checks): a negative count
// or, with count > 0, a null or MPI_IN_PLACE recvbuf, a null sendbuf, or sendbuf == recvbuf
// (in place is MPI_IN_PLACE). Such calls go to the MPI library as they are, for its own
// error: never served (libcollx would write through an MPI_IN_PLACE recvbuf, and take
// sendbuf == recvbuf as in place), never on host copies.
inline bool mpi_rejects(const void* sendbuf, const void* recvbuf, MPI_Count count) {
  if (count <= 0) return count < 0;
  return recvbuf == nullptr || recvbuf == MPI_IN_PLACE || sendbuf == nullptr ||
         sendbuf == recvbuf;
}
void set_host_copies(HostCopiesOf of);
// Whether a passed-through call on these buffers would go through host copies (one of them in
// device memory, or COLLX_MPI_HOST_COPIES=1).
bool needs_host_copies(const void* sendbuf, const void* recvbuf, MPI_Count count);
extern std::atomic<long long> g_copied[kFnCount];
int pmpi_allreduce(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int pmpi_iallreduce(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count,
                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request);
// MPI_Allreduce_init(_c) to MPI: with host copies, MPI's persistent request is made on them and
// becomes one of ours (add_copied_persistent).
int pmpi_allreduce_init(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                        MPI_Request* request);
// A copied persistent request's MPI_Start: its host copies *h of extent e made again from
// sendbuf and recvbuf, at the addresses MPI's request was made on, made_send and made_recv
// (else an error: the buffers are no longer device memory). Its completion: the result
// copied back. A failure is said on stderr and is MPI_ERR_OTHER through MPI_COMM_WORLD's
// handler (as for a started request).
int recopy(Fn fn, const void* sendbuf, void* recvbuf, collx::Extent e, const void* made_send,
           const void* made_recv, collx::HostCopies* h);
int copy_back(Fn fn, collx::HostCopies* h);

// requests.cc: a served MPI_Iallreduce is a collx request behind an MPICH generalized request.
// How its operation ended (COLLX_MPI_VERBOSE): through collx_wait in the intercepted MPI_Wait
// (C, or mpi_f08's), in the generalized request's wait_fn (MPI_Waitall), through collx_test in
// its poll_fn (MPI_Test*, MPI_Waitany, MPI_Waitsome), or after the program freed its request.
enum Ending { kByWait, kByWaitFn, kByPoll, kByOrphan, kEndingCount };
extern std::atomic<long long> g_endings[kEndingCount];
// Puts the posted operation `op` of function `fn` behind a new generalized request in
// *request. If MPI has no request left, ends the operation and returns MPI's error.
int start_request(Fn fn, collx_request_t op, MPI_Request* request);
// Puts MPI's request `inner` of a passed-through MPI_Iallreduce on the host copies `copies`
// (or an active copied persistent request: persistent.cc) behind a new generalized request in
// *request, which completes once `inner` has and the result is copied back. If MPI has no
// request left, ends the operation and returns MPI's error.
int start_copied_request(Fn fn, MPI_Request inner, std::shared_ptr<collx::HostCopies> copies,
                         MPI_Request* request);
// MPI_Wait's part (C and mpi_f08; `wait`): a request of ours whose operation has not ended is
// waited for (collx_wait with MPI's progress running, or MPI_Wait on the inner request and the
// copy back); MPICH's wait then finds it complete. MPI_Request_get_status's part (not `wait`):
// the operation is tested once (MPICH's MPI_Request_get_status does not poll generalized
// requests), and completed if it has ended.
void advance_if_ours(const MPI_Request* request, bool wait);
// Ends the operations whose requests the program freed (MPI_Request_free before completion,
// after which nothing in MPI polls them): those done (at every served MPI_Iallreduce), or all
// of them, waiting (at MPI_Finalize).
void reap_orphans(bool wait);

// The status of a served operation that completed (as MPI's for a collective: no source, tag or
// elements), unless MPI_STATUS_IGNORE.
void set_operation_status(MPI_Status* status);

// persistent.cc: a served MPI_Allreduce_init is MPI's own persistent request (from
// PMPI_Allreduce_init) that MPI_Start runs through collx_iallreduce; MPI_Wait and MPI_Test
// complete it directly, and the other calls see a generalized request in its place while it is
// active. The persistent requests of ours not freed yet (any_persistent: else none of this
// runs).
extern std::atomic<int> g_persistent_count;
inline bool any_persistent() { return g_persistent_count.load(std::memory_order_relaxed) > 0; }
// MPI_Start of a request of ours, by libcollx or (its libcollx communicator gone) by MPI.
enum Starter { kByLibcollx, kByMpi, kStarterCount };
extern std::atomic<long long> g_starts[kStarterCount];
// Makes MPI's persistent request `request` one of ours: an allreduce of `count` libcollx
// elements on the libcollx communicator `comm`; sendbuf is COLLX_IN_PLACE for in place.
void add_persistent(MPI_Request request, Fn fn, const void* sendbuf, void* recvbuf, size_t count,
                    collx_dtype_t dtype, collx_op_t op, collx_comm_t comm);
// Makes MPI's persistent request `request`, made on the host copies `copies` of extent e of
// device buffers sendbuf and recvbuf (MPI_IN_PLACE: in place), one of ours: MPI runs it, and
// MPI_Start makes the copies again, its completion copies the result back.
void add_copied_persistent(MPI_Request request, Fn fn, const void* sendbuf, void* recvbuf,
                           collx::Extent e, std::shared_ptr<collx::HostCopies> copies);
// MPI_Start: one of ours runs through libcollx (or MPI, its communicator gone); another
// request goes to PMPI_Start.
int start_persistent(MPI_Request* request);
// MPI_Wait (`wait`) or MPI_Test on *request alone: true if it was ours to complete, with
// *flag (MPI_Test), *status and MPI's return code *rc set: a started operation is waited for or
// tested (and inactive again once complete), an inactive request is as MPI_REQUEST_NULL.
// False for any other request, which goes to MPI (through a Swap).
bool complete_persistent(MPI_Request* request, bool wait, int* flag, MPI_Status* status,
                         int* rc);
// MPI_Waitall: true if every request in the array is MPI_REQUEST_NULL or one of ours that
// complete_persistent would complete; then each is waited for in the array's order, with
// *statuses and *rc set as MPI_Waitall sets them. False otherwise, before anything is waited
// for (MPI's call then completes them, through a Swap).
bool waitall_persistent(int count, MPI_Request requests[], MPI_Status statuses[], int* rc);
// Whether `request` is a persistent request of ours that MPI runs on host copies, active.
bool active_copied_persistent(MPI_Request request);
// MPI_Request_free's part before MPI frees `request`: one of ours is forgotten, and its
// active operation, if any, goes on as that of a freed MPI_Iallreduce request.
void forget_persistent(MPI_Request request);
// The libcollx communicator `comm` is being destroyed: MPI runs the persistent requests on it
// from now on.
void persistent_comm_gone(collx_comm_t comm);
// The requests a completion call (MPI_Wait, MPI_Testall, ...) gives MPI: `requests` itself, or
// a copy in which each persistent request of ours that is active is replaced by its
// operation's generalized request (made now if it has none), and (`inactive_as_null`) each
// inactive one that libcollx runs by MPI_REQUEST_NULL, which MPI's completion calls treat as
// MPI treats an inactive request (MPICH 4.0.2's MPI_Wait hangs on an inactive persistent
// collective request, and its MPI_Request_get_status says it is not complete). When the Swap
// ends, the program's array gets MPI's changes, but for the persistent requests, which stay;
// those whose operation MPI completed are inactive again.
class Swap {
 public:
  Swap(int n, MPI_Request* requests, bool inactive_as_null = true)
      : n_(n), requests_(requests), seen_(requests) {
    if (n > 0 && requests != nullptr && any_persistent()) swap_in(inactive_as_null);
  }
  ~Swap() {
    if (seen_ != requests_) swap_back();
  }
  Swap(const Swap&) = delete;
  Swap& operator=(const Swap&) = delete;
  MPI_Request* requests() const { return seen_; }

 private:
  void swap_in(bool inactive_as_null);
  void swap_back();
  int n_;
  MPI_Request* requests_;
  MPI_Request* seen_;
};

// gate.cc: whether an MPI other than the one libcollx_mpi.so was built with has been loaded
// since the program started (through dlopen), said on stderr if so: MPI_Init and
// MPI_Init_thread then refuse (MPI_ERR_OTHER).
bool late_foreign_mpi();

}  // namespace collx_mpi

// libcollx_mpi's own MPI functions (exports.h, gate.cc).
extern "C" {
#define COLLX_MPI_DECLARE(name) decltype(name) collx_##name;
COLLX_MPI_C_EXPORTS(COLLX_MPI_DECLARE)
#undef COLLX_MPI_DECLARE
void collx_mpi_wait_f08_(MPI_Request* request, void* status, int* ierror);
void collx_mpi_request_get_status_f08_(MPI_Request* request, void* flag, void* status,
                                       int* ierror);
void collx_mpi_request_free_f08_(MPI_Request* request, int* ierror);
void collx_mpi_comm_free_f08_(MPI_Comm* comm, int* ierror);
void collx_mpi_allreduce_init_f08ts_(void* a, void* b, void* c, void* d, void* e, void* f,
                                     void* g, void* h, void* ierror);
void collx_mpi_allreduce_init_f08ts_large_(void* a, void* b, void* c, void* d, void* e,
                                           void* f, void* g, void* h, void* ierror);
}
