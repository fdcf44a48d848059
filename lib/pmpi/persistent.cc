// Persistent allreduce under the preload (MPI 4.0: MPI_Allreduce_init, MPI_Allreduce_init_c).
// A served one is MPI's own persistent request, from PMPI_Allreduce_init, plus what libcollx
// needs to run it. MPI_Start starts a collx_iallreduce. MPI_Wait and MPI_Test on that request
// alone complete it directly (collx_wait, collx_test), as a program's loop of MPI_Start and
// MPI_Wait does, with nothing of MPI's in between; so does MPI_Waitall on an array of such
// requests (and MPI_REQUEST_NULL) only, as after MPI_Startall. Every other use of a started
// request (the completion calls over arrays, MPI_Request_get_status, MPI_Request_free) first
// puts its operation behind a generalized request (requests.cc), which those calls are given
// in its place while it is active (Swap). MPICH has no persistent generalized request, hence the
// swap: a generalized request is freed by its completion, a persistent one only becomes
// inactive.
//
// A copied one (a call libcollx does not serve, on device buffers: passthrough.cc) is MPI's own
// persistent request made on host copies of the buffers. MPI runs it; MPI_Start makes the
// copies again before MPI's start, and its completion (by MPI_Wait or MPI_Test alone, or by
// the generalized request that stands for it in the other calls) copies the result back.
//
// MPI's own persistent request is the fallback. Inactive (or started by MPI), the request goes
// to MPI as it is. MPI starts it itself:
// - once the libcollx communicator is gone (MPI_Comm_free, MPI_Comm_disconnect or
//   MPI_Finalize; MPI keeps a freed communicator alive for its persistent requests);
// - wherever the start is not intercepted: mpi_f08's MPI_Start calls PMPI_Start itself.
// Every rank does the same in each case, so all run the operation the same way.
//
// Threads: a request is used by one thread at a time (MPI's rule), so its state is that
// thread's; the lock guards the table, and `comm`, which a communicator's free may clear from
// another thread.
#include <cstdio>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "pmpi/preload.h"

namespace collx_mpi {

std::atomic<int> g_persistent_count{0};
std::atomic<long long> g_starts[kStarterCount] = {};

namespace {

struct Persistent {
  Fn fn = kAllreduceInit;
  const void* sendbuf = nullptr;  // COLLX_IN_PLACE for MPI_IN_PLACE
  void* recvbuf = nullptr;
  size_t count = 0;  // libcollx elements
  collx_dtype_t dtype = COLLX_INT8;
  collx_op_t op = COLLX_SUM;
  collx_comm_t comm = nullptr;  // null once the libcollx communicator is gone (under g_mutex)
  // Copied: the host copies of extent `extent` MPI's request was made on, at made_send and
  // made_recv (else null).
  std::shared_ptr<collx::HostCopies> copies;
  collx::Extent extent;
  const void* made_send = nullptr;
  const void* made_recv = nullptr;
  // Active: the started operation (copied: in_mpi), or once behind a generalized request,
  // that request.
  collx_request_t running = nullptr;
  bool in_mpi = false;
  MPI_Request behind = MPI_REQUEST_NULL;
  bool active() const { return running != nullptr || in_mpi || behind != MPI_REQUEST_NULL; }
};

std::mutex g_mutex;
// By MPI's persistent request. (An unordered_map's elements stay where they are: a pointer to
// one is valid until it is erased, which only the thread using the request does.)
std::unordered_map<MPI_Request, Persistent> g_persistent;

void count_them() {  // under g_mutex
  g_persistent_count.store(static_cast<int>(g_persistent.size()), std::memory_order_relaxed);
}

// Ours, or null. `comm` is set to its libcollx communicator (null once gone), if asked.
Persistent* find(MPI_Request request, collx_comm_t* comm = nullptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_persistent.find(request);
  if (it == g_persistent.end()) return nullptr;
  if (comm != nullptr) *comm = it->second.comm;
  return &it->second;
}

// Puts the started operation of p (MPI's request `self`) behind a generalized request (the MPI
// calls other than MPI_Wait and MPI_Test on the request alone need one). If MPI has none
// left, the operation has been ended and the request is inactive.
void put_behind(Persistent* p, MPI_Request self) {
  int rc = MPI_SUCCESS;
  if (p->in_mpi) {
    p->in_mpi = false;
    rc = start_copied_request(p->fn, self, p->copies, &p->behind);
  } else if (p->running != nullptr) {
    const collx_request_t op = p->running;
    p->running = nullptr;
    rc = start_request(p->fn, op, &p->behind);
  }
  if (rc != MPI_SUCCESS) p->behind = MPI_REQUEST_NULL;
}

// MPI_Start of an active request (erroneous): MPI's error, through MPI_COMM_WORLD's handler as
// MPICH's.
int start_active(const Persistent* p) {
  std::fprintf(stderr, "libcollx_mpi: MPI_Start of a persistent %s that is active\n",
               kFnNames[p->fn]);
  PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_REQUEST);
  return MPI_ERR_REQUEST;
}

// The arrays of a Swap on this thread (completion calls do not nest), kept for their capacity.
thread_local std::vector<MPI_Request> t_swapped;
thread_local std::vector<int> t_ours;

// Adds p as MPI's persistent request `request`. If there is no memory for it, frees MPI's
// request and throws std::bad_alloc.
void add(MPI_Request request, const Persistent& p) {
  try {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_persistent[request] = p;  // (a handle MPI reuses replaces one freed behind our back)
    count_them();
  } catch (const std::bad_alloc&) {
    PMPI_Request_free(&request);
    throw;
  }
}

}  // namespace

void add_persistent(MPI_Request request, Fn fn, const void* sendbuf, void* recvbuf, size_t count,
                    collx_dtype_t dtype, collx_op_t op, collx_comm_t comm) {
  Persistent p;
  p.fn = fn;
  p.sendbuf = sendbuf;
  p.recvbuf = recvbuf;
  p.count = count;
  p.dtype = dtype;
  p.op = op;
  p.comm = comm;
  add(request, p);
}

void add_copied_persistent(MPI_Request request, Fn fn, const void* sendbuf, void* recvbuf,
                           collx::Extent e, std::shared_ptr<collx::HostCopies> copies) {
  Persistent p;
  p.fn = fn;
  p.sendbuf = sendbuf;
  p.recvbuf = recvbuf;
  p.extent = e;
  p.made_send = copies->send();
  p.made_recv = copies->recv();
  p.copies = std::move(copies);
  add(request, p);
}

int start_persistent(MPI_Request* request) {
  if (request == nullptr || !any_persistent()) return PMPI_Start(request);
  collx_comm_t comm = nullptr;
  Persistent* p = find(*request, &comm);
  if (p == nullptr) return PMPI_Start(request);
  if (p->copies != nullptr) {
    if (p->active()) return start_active(p);
    int rc = recopy(p->fn, p->sendbuf, p->recvbuf, p->extent, p->made_send, p->made_recv,
                    p->copies.get());
    if (rc == MPI_SUCCESS) rc = PMPI_Start(request);
    p->in_mpi = rc == MPI_SUCCESS;
    return rc;
  }
  if (comm == nullptr) {
    g_starts[kByMpi].fetch_add(1, std::memory_order_relaxed);
    return PMPI_Start(request);
  }
  if (p->active()) return start_active(p);
  reap_orphans(false);
  const collx_status_t st =
      collx_iallreduce(p->sendbuf, p->recvbuf, p->count, p->dtype, p->op, comm, &p->running);
  if (st != COLLX_SUCCESS) {
    p->running = nullptr;
    report_failure(p->fn, " (MPI_Start)");
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, mpi_error(st));
    return mpi_error(st);
  }
  g_starts[kByLibcollx].fetch_add(1, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

namespace {

// Whether MPI_Wait, MPI_Test and MPI_Waitall may complete served p directly: started by
// libcollx and not behind a generalized request, or inactive and libcollx's to start (then as
// MPI_REQUEST_NULL). Otherwise MPI's call completes it (through a Swap).
bool direct(const Persistent* p, collx_comm_t comm) {
  return p->copies == nullptr && p->behind == MPI_REQUEST_NULL &&
         (p->running != nullptr || comm != nullptr);
}

// p's operation ended with `st`: inactive again, *status set, the ending counted as `how`; a
// failure is said on stderr and is its MPI error (mpi_error).
int finish(Persistent* p, collx_status_t st, Ending how, MPI_Status* status) {
  p->running = nullptr;
  g_endings[how].fetch_add(1, std::memory_order_relaxed);
  set_operation_status(status);
  if (st == COLLX_SUCCESS) return MPI_SUCCESS;
  report_failure(p->fn);
  return mpi_error(st);
}

void set_empty_status(MPI_Status* status) {  // (of MPI_REQUEST_NULL, as MPI gives it)
  MPI_Request none = MPI_REQUEST_NULL;
  PMPI_Wait(&none, status);
}

// MPI_Wait (`wait`) or MPI_Test on copied p alone, MPI's request *request, not behind a
// generalized request: MPI's call, then the result copied back once complete; inactive, as
// MPI_REQUEST_NULL (MPICH 4.0.2 hangs waiting for its own inactive persistent collective).
int complete_copied(Persistent* p, MPI_Request* request, bool wait, int* flag,
                    MPI_Status* status) {
  if (flag != nullptr) *flag = 1;
  if (!p->in_mpi) {
    set_empty_status(status);
    return MPI_SUCCESS;
  }
  int done = 1;
  const int rc = wait ? PMPI_Wait(request, status) : PMPI_Test(request, &done, status);
  if (flag != nullptr) *flag = done;
  if (rc == MPI_SUCCESS && !done) return rc;
  p->in_mpi = false;
  const int back = copy_back(p->fn, p->copies.get());
  return rc != MPI_SUCCESS ? rc : back;
}

// MPI_Waitall's requests of ours (null for MPI_REQUEST_NULL), and what each ended with.
thread_local std::vector<Persistent*> t_waited;
thread_local std::vector<int> t_errors;

}  // namespace

bool complete_persistent(MPI_Request* request, bool wait, int* flag, MPI_Status* status,
                         int* rc) {
  if (request == nullptr || !any_persistent()) return false;
  collx_comm_t comm = nullptr;
  Persistent* p = find(*request, &comm);
  if (p != nullptr && p->copies != nullptr && p->behind == MPI_REQUEST_NULL) {
    *rc = complete_copied(p, request, wait, flag, status);
    return true;
  }
  if (p == nullptr || !direct(p, comm)) return false;
  *rc = MPI_SUCCESS;
  if (flag != nullptr) *flag = 1;
  if (p->running == nullptr) {  // inactive: as MPI_REQUEST_NULL
    set_empty_status(status);
    return true;
  }
  collx_status_t st = COLLX_SUCCESS;
  {
    const MpiProgress progress;
    st = wait ? collx_wait(&p->running) : collx_test(&p->running);
    if (st == COLLX_IN_PROGRESS) {  // (MPI_Test only)
      if (flag != nullptr) *flag = 0;
      MpiProgress::progress();  // (as MPI_Test progresses MPI's own operations)
      return true;
    }
  }
  *rc = finish(p, st, wait ? kByWait : kByPoll, status);
  // (as for a generalized request)
  if (*rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(MPI_COMM_WORLD, *rc);
  return true;
}

bool waitall_persistent(int count, MPI_Request requests[], MPI_Status statuses[], int* rc) {
  if (count <= 0 || requests == nullptr || !any_persistent()) return false;
  t_waited.assign(static_cast<size_t>(count), nullptr);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (size_t i = 0; i < t_waited.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      const auto it = g_persistent.find(requests[i]);
      if (it == g_persistent.end() || !direct(&it->second, it->second.comm)) return false;
      t_waited[i] = &it->second;
    }
  }
  t_errors.assign(t_waited.size(), MPI_SUCCESS);
  bool failed = false;
  {
    const MpiProgress progress;
    for (size_t i = 0; i < t_waited.size(); ++i) {
      Persistent* p = t_waited[i];
      MPI_Status* status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
      if (p == nullptr || p->running == nullptr) {  // MPI_REQUEST_NULL, or inactive
        set_empty_status(status);
        continue;
      }
      t_errors[i] = finish(p, collx_wait(&p->running), kByWaitFn, status);
      failed = failed || t_errors[i] != MPI_SUCCESS;
    }
  }
  *rc = MPI_SUCCESS;
  if (failed) {  // as MPI_Waitall reports errors: each request's in its status
    if (statuses != MPI_STATUSES_IGNORE) {
      for (size_t i = 0; i < t_errors.size(); ++i) statuses[i].MPI_ERROR = t_errors[i];
    }
    *rc = MPI_ERR_IN_STATUS;
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, *rc);
  }
  return true;
}

bool active_copied_persistent(MPI_Request request) {
  if (!any_persistent()) return false;
  const Persistent* p = find(request);
  return p != nullptr && p->copies != nullptr && p->active();
}

void forget_persistent(MPI_Request request) {
  if (!any_persistent()) return;
  Persistent* p = find(request);
  if (p == nullptr) return;
  if (p->copies != nullptr && p->active()) {
    // Freed while active (erroneous): MPI's request is freed next, so its operation ends here
    // first, its result copied back.
    MPI_Request r = request;
    if (p->behind != MPI_REQUEST_NULL) r = p->behind;
    PMPI_Wait(&r, MPI_STATUS_IGNORE);
    if (p->in_mpi) copy_back(p->fn, p->copies.get());
    p->in_mpi = false;
    p->behind = MPI_REQUEST_NULL;
  }
  put_behind(p, request);
  const MPI_Request behind = p->behind;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_persistent.erase(request);
    count_them();
  }
  // Freed while active: its operation goes on, and ends as a freed MPI_Iallreduce's does.
  if (behind != MPI_REQUEST_NULL) {
    MPI_Request r = behind;
    PMPI_Request_free(&r);
  }
}

void persistent_comm_gone(collx_comm_t comm) {
  if (comm == nullptr || !any_persistent()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& entry : g_persistent) {
    if (entry.second.comm == comm) entry.second.comm = nullptr;
  }
}

void Swap::swap_in(bool inactive_as_null) {
  // Room first: a throw below this (a request put behind a generalized one, which ended its
  // operation) leaves the program's array as it was.
  t_swapped.reserve(static_cast<size_t>(n_));
  t_ours.reserve(static_cast<size_t>(n_));
  t_ours.clear();
  for (int i = 0; i < n_; ++i) {
    collx_comm_t comm = nullptr;
    Persistent* p = find(requests_[i], &comm);
    if (p == nullptr) continue;
    put_behind(p, requests_[i]);
    // Inactive, and started by libcollx (copied: with its copies): seen as MPI_REQUEST_NULL
    // (or else MPI's own).
    const bool ours = comm != nullptr || p->copies != nullptr;
    if (p->behind == MPI_REQUEST_NULL && (!inactive_as_null || !ours)) continue;
    if (t_ours.empty()) t_swapped.assign(requests_, requests_ + n_);
    t_swapped[static_cast<size_t>(i)] = p->behind;
    t_ours.push_back(i);
  }
  if (!t_ours.empty()) seen_ = t_swapped.data();
}

void Swap::swap_back() {
  size_t next = 0;
  for (int i = 0; i < n_; ++i) {
    if (next < t_ours.size() && t_ours[next] == i) {
      ++next;
      // The persistent request stays in the program's array; inactive once MPI completed its
      // generalized request.
      if (seen_[i] == MPI_REQUEST_NULL) {
        Persistent* p = find(requests_[i]);
        if (p != nullptr) p->behind = MPI_REQUEST_NULL;
      }
      continue;
    }
    requests_[i] = seen_[i];
  }
}

}  // namespace collx_mpi
