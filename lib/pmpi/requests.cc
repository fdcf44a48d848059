// The requests of MPI_Iallreduce under the preload, behind MPICH generalized requests
// (MPIX_Grequest_start), so every MPI completion call accepts them, mixed with MPI's own
// requests. Two kinds:
// - served: a collx_iallreduce;
// - copied: a passed-through call on device buffers, which the MPI library runs on host
//   copies (its own request, `inner`); the result is copied back when `inner` completes.
// MPICH completes them through callbacks: MPI_Waitall calls wait_fn (collx_wait, or MPI_Wait
// on `inner`: the operation may run on the waiting thread); MPI_Test*, MPI_Waitany and
// MPI_Waitsome call poll_fn (collx_test or MPI_Test, which wait for no rank to call in).
// Both run MPI's progress while libcollx waits (MpiProgress).
// MPICH's MPI_Wait would only poll, and its MPI_Request_get_status would not even poll, so
// collx_mpi.cc intercepts both and calls advance_if_ours first.
#include <cstdio>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

#include "pmpi/preload.h"

namespace collx_mpi {

std::atomic<long long> g_endings[kEndingCount] = {};

namespace {

// One MPI_Iallreduce operation of ours, the extra state of its generalized request.
struct Pending {
  collx_request_t request = nullptr;  // served: null once the operation completed
  MPI_Request inner = MPI_REQUEST_NULL;  // copied: MPI's request, null once completed
  std::shared_ptr<collx::HostCopies> copies;  // copied: null once the result is back
  MPI_Request mpi = MPI_REQUEST_NULL;  // the generalized request
  int error = MPI_SUCCESS;             // what MPI's completion call reports
  Fn fn = kIallreduce;                 // which function posted it (for the statistics)
  bool served = true;                  // a collx operation, not a copied one
  Pending* next_orphan = nullptr;      // in Orphans
  bool ended() const { return request == nullptr && copies == nullptr; }
};

// The operations whose request the program freed, oldest first: a list through the operations
// themselves, so that MPI's free_fn callback allocates nothing (it may not throw).
struct Orphans {
  Pending* head = nullptr;
  Pending* tail = nullptr;
  bool empty() const { return head == nullptr; }
  void push(Pending* p) {
    p->next_orphan = nullptr;
    (tail != nullptr ? tail->next_orphan : head) = p;
    tail = p;
  }
  Pending* pop() {  // the oldest, or null
    Pending* p = head;
    if (p != nullptr && (head = p->next_orphan) == nullptr) tail = nullptr;
    return p;
  }
  void put_before(Orphans* later) {  // later's operations after these, later emptied
    if (later->empty()) return;
    (tail != nullptr ? tail->next_orphan : head) = later->head;
    tail = later->tail;
    *later = Orphans();
  }
};

// Operations of ours not completed yet: by generalized request (for MPI_Wait), and those
// whose request the program freed (MPI_Request_free) before they completed, which nothing in
// MPI will poll again.
struct Requests {
  std::mutex mutex;
  std::unordered_map<MPI_Request, Pending*> pending;
  Orphans orphans;
  std::atomic<int> pending_count{0};     // pending.size(): MPI_Wait's check without the lock
  std::atomic<bool> any_orphans{false};  // !orphans.empty(): MPI_Iallreduce's, likewise
};
Requests g_requests;

void forget(Pending* p) {  // under g_requests.mutex
  g_requests.pending.erase(p->mpi);
  g_requests.pending_count.store(static_cast<int>(g_requests.pending.size()),
                                 std::memory_order_relaxed);
}

// Waits for p's operation to end (`wait`), or tests it once. True once it has ended, with
// what MPI's completion call reports in p->error (a failure said on stderr; `context` tells a
// freed request's). A copied operation's MPI_Test runs MPI's progress, which in MPICH does not
// poll generalized requests; `in_test` keeps it from coming back here all the same.
thread_local bool in_test = false;
bool advance(Pending* p, bool wait, const char* context = "") {
  if (p->ended()) return true;
  if (p->request != nullptr) {
    const collx_status_t st = wait ? collx_wait(&p->request) : collx_test(&p->request);
    if (st == COLLX_IN_PROGRESS) return false;
    if (st != COLLX_SUCCESS) {
      report_failure(p->fn, context);
      p->error = mpi_error(st);
    }
    return true;
  }
  if (in_test) return false;
  int done = 1;
  in_test = true;
  const int rc = wait ? PMPI_Wait(&p->inner, MPI_STATUS_IGNORE)
                      : PMPI_Test(&p->inner, &done, MPI_STATUS_IGNORE);
  in_test = false;
  if (rc == MPI_SUCCESS && !done) return false;
  p->error = rc;
  const collx::Status st = p->copies->copy_back();
  if (!st.ok()) {
    std::fprintf(stderr, "libcollx_mpi: %s%s of device buffers failed: %s\n", kFnNames[p->fn],
                 context, st.message().c_str());
    p->error = MPI_ERR_OTHER;
  }
  p->copies.reset();
  return true;
}

// The operation ended (advance returned true): MPI's completion call reports it (query_fn),
// then frees the request (free_fn). `how` is counted for served operations.
void complete(Pending* p, Ending how) {
  if (p->served) g_endings[how].fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    forget(p);  // before the handle can be freed, and then reused for another request
  }
  PMPI_Grequest_complete(p->mpi);
}

// The generalized request's callbacks (MPICH calls them without its global lock).
int query_fn(void* state, MPI_Status* status) {
  set_operation_status(status);
  return static_cast<Pending*>(state)->error;  // what MPI_Wait and the others return
}

int free_fn(void* state) {
  auto* p = static_cast<Pending*>(state);
  if (p->ended()) {
    delete p;
    return MPI_SUCCESS;
  }
  // MPI_Request_free before completion: MPICH frees the request now (the standard would wait
  // for MPI_Grequest_complete), so it is never completed, and nothing polls the operation.
  std::lock_guard<std::mutex> lock(g_requests.mutex);
  forget(p);
  g_requests.orphans.push(p);
  g_requests.any_orphans.store(true, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

int cancel_fn(void*, int) { return MPI_SUCCESS; }  // (cancelling a collective is erroneous)

int poll_fn(void* state, MPI_Status*) {
  auto* p = static_cast<Pending*>(state);
  // (a test may run a due operation on this thread, waiting for its peers meanwhile)
  const MpiProgress progress;
  if (!p->ended() && advance(p, false)) complete(p, kByPoll);
  return MPI_SUCCESS;
}

int wait_fn(int count, void** states, double, MPI_Status*) {
  const MpiProgress progress;  // (MPICH calls wait_fn without its lock: MPI may be called)
  for (int i = 0; i < count; ++i) {
    auto* p = static_cast<Pending*>(states[i]);
    if (!p->ended() && advance(p, true)) complete(p, kByWaitFn);
  }
  return MPI_SUCCESS;
}

// Puts the operation of `made` behind a new generalized request in *request. If there is no
// memory for it, ends the operation and throws std::bad_alloc; if MPI has no request left,
// ends the operation and returns MPI's error.
int start(Pending&& made, MPI_Request* request) {
  Pending* p = nullptr;
  try {
    p = new Pending(std::move(made));  // (made is untouched if this throws)
  } catch (const std::bad_alloc&) {
    advance(&made, true);
    throw;
  }
  const int rc = PMPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, p, &p->mpi);
  if (rc != MPI_SUCCESS) {
    advance(p, true);
    delete p;
    *request = MPI_REQUEST_NULL;
    return rc;
  }
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    try {
      g_requests.pending.emplace(p->mpi, p);
    } catch (const std::bad_alloc&) {
      // Not in the table, the request still works: MPI_Wait then finds it complete by
      // polling (poll_fn) rather than by collx_wait first.
    }
    g_requests.pending_count.store(static_cast<int>(g_requests.pending.size()),
                                   std::memory_order_relaxed);
  }
  *request = p->mpi;
  return MPI_SUCCESS;
}

}  // namespace

void set_operation_status(MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
}

int start_request(Fn fn, collx_request_t op, MPI_Request* request) {
  Pending p;
  p.fn = fn;
  p.request = op;
  return start(std::move(p), request);
}

int start_copied_request(Fn fn, MPI_Request inner, std::shared_ptr<collx::HostCopies> copies,
                         MPI_Request* request) {
  Pending p;
  p.fn = fn;
  p.served = false;
  p.inner = inner;
  p.copies = std::move(copies);
  return start(std::move(p), request);
}

void advance_if_ours(const MPI_Request* request, bool wait) {
  if (request == nullptr || g_requests.pending_count.load(std::memory_order_relaxed) == 0) return;
  Pending* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    const auto it = g_requests.pending.find(*request);
    if (it != g_requests.pending.end()) p = it->second;
  }
  if (p == nullptr) return;
  const MpiProgress progress;
  if (advance(p, wait)) complete(p, wait ? kByWait : kByPoll);
}

void reap_orphans(bool wait) {
  if (!wait && !g_requests.any_orphans.load(std::memory_order_relaxed)) return;
  Orphans mine;
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    std::swap(mine, g_requests.orphans);
    g_requests.any_orphans.store(false, std::memory_order_relaxed);
  }
  Orphans left;
  while (Pending* p = mine.pop()) {
    if (!advance(p, wait, " (request freed)")) {
      left.push(p);
      continue;
    }
    if (p->served) g_endings[kByOrphan].fetch_add(1, std::memory_order_relaxed);
    delete p;
  }
  if (left.empty()) return;
  std::lock_guard<std::mutex> lock(g_requests.mutex);
  left.put_before(&g_requests.orphans);  // (those freed meanwhile are younger)
  std::swap(left, g_requests.orphans);
  g_requests.any_orphans.store(true, std::memory_order_relaxed);
}

}  // namespace collx_mpi
