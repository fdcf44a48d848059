// A served MPI_Iallreduce: a collx_iallreduce behind an MPICH generalized request
// (MPIX_Grequest_start), so every MPI completion call accepts it, mixed with MPI's own
// requests. MPICH completes it through callbacks: MPI_Waitall calls wait_fn (collx_wait: the
// operation may run on the waiting thread); MPI_Test*, MPI_Waitany and MPI_Waitsome call
// poll_fn (collx_test, which waits for no rank to call in). MPICH's MPI_Wait would only poll,
// so collx_mpi.cc intercepts it and calls wait_if_served first.
#include <mutex>
#include <unordered_map>
#include <vector>

#include "pmpi/preload.h"

namespace collx_mpi {

std::atomic<long long> g_endings[kEndingCount] = {};

namespace {

// One served MPI_Iallreduce, the extra state of its generalized request.
struct Pending {
  collx_request_t request = nullptr;  // null once the operation completed
  MPI_Request mpi = MPI_REQUEST_NULL;  // the generalized request
  int error = MPI_SUCCESS;             // what MPI's completion call reports
  Fn fn = kIallreduce;                 // which function posted it (for the statistics)
};

// Served MPI_Iallreduce operations not completed yet: by generalized request (for MPI_Wait),
// and those whose request the program freed (MPI_Request_free) before they completed, which
// nothing in MPI will poll again.
struct Requests {
  std::mutex mutex;
  std::unordered_map<MPI_Request, Pending*> pending;
  std::vector<Pending*> orphans;
  std::atomic<int> pending_count{0};     // pending.size(): MPI_Wait's check without the lock
  std::atomic<bool> any_orphans{false};  // !orphans.empty(): MPI_Iallreduce's, likewise
};
Requests g_requests;

void forget(Pending* p) {  // under g_requests.mutex
  g_requests.pending.erase(p->mpi);
  g_requests.pending_count.store(static_cast<int>(g_requests.pending.size()),
                                 std::memory_order_relaxed);
}

// The operation ended with `st` (collx_test or collx_wait set p->request to null): MPI's
// completion call reports it (query_fn), then frees the request (free_fn).
void complete(Pending* p, collx_status_t st, Ending how) {
  g_endings[how].fetch_add(1, std::memory_order_relaxed);
  if (st != COLLX_SUCCESS) {
    report_failure(p->fn);
    p->error = MPI_ERR_OTHER;
  }
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    forget(p);  // before the handle can be freed, and then reused for another request
  }
  PMPI_Grequest_complete(p->mpi);
}

// The generalized request's callbacks (MPICH calls them without its global lock).
int query_fn(void* state, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return static_cast<Pending*>(state)->error;  // what MPI_Wait and the others return
}

int free_fn(void* state) {
  auto* p = static_cast<Pending*>(state);
  if (p->request == nullptr) {
    delete p;
    return MPI_SUCCESS;
  }
  // MPI_Request_free before completion: MPICH frees the request now (the standard would wait
  // for MPI_Grequest_complete), so it is never completed, and nothing polls the operation.
  std::lock_guard<std::mutex> lock(g_requests.mutex);
  forget(p);
  g_requests.orphans.push_back(p);
  g_requests.any_orphans.store(true, std::memory_order_relaxed);
  return MPI_SUCCESS;
}

int cancel_fn(void*, int) { return MPI_SUCCESS; }  // (cancelling a collective is erroneous)

int poll_fn(void* state, MPI_Status*) {
  auto* p = static_cast<Pending*>(state);
  if (p->request != nullptr) {
    const collx_status_t st = collx_test(&p->request);  // waits for no rank to call in
    if (st != COLLX_IN_PROGRESS) complete(p, st, kByPoll);
  }
  return MPI_SUCCESS;
}

int wait_fn(int count, void** states, double, MPI_Status*) {
  const MpiProgress progress;  // (MPICH calls wait_fn without its lock: MPI may be called)
  for (int i = 0; i < count; ++i) {
    auto* p = static_cast<Pending*>(states[i]);
    if (p->request != nullptr) complete(p, collx_wait(&p->request), kByWaitFn);
  }
  return MPI_SUCCESS;
}

}  // namespace

int start_request(Fn fn, collx_request_t op, MPI_Request* request) {
  auto* p = new Pending();
  p->fn = fn;
  p->request = op;
  const int rc = PMPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, p, &p->mpi);
  if (rc != MPI_SUCCESS) {  // (MPI is out of requests) the operation is posted: end it here
    collx_wait(&p->request);
    delete p;
    *request = MPI_REQUEST_NULL;
    return rc;
  }
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    g_requests.pending.emplace(p->mpi, p);
    g_requests.pending_count.store(static_cast<int>(g_requests.pending.size()),
                                   std::memory_order_relaxed);
  }
  *request = p->mpi;
  return MPI_SUCCESS;
}

void wait_if_served(const MPI_Request* request) {
  if (request == nullptr || g_requests.pending_count.load(std::memory_order_relaxed) == 0) return;
  Pending* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    const auto it = g_requests.pending.find(*request);
    if (it != g_requests.pending.end()) p = it->second;
  }
  if (p == nullptr) return;
  const MpiProgress progress;
  complete(p, collx_wait(&p->request), kByWait);
}

void reap_orphans(bool wait) {
  if (!wait && !g_requests.any_orphans.load(std::memory_order_relaxed)) return;
  std::vector<Pending*> mine;
  {
    std::lock_guard<std::mutex> lock(g_requests.mutex);
    mine.swap(g_requests.orphans);
    g_requests.any_orphans.store(false, std::memory_order_relaxed);
  }
  std::vector<Pending*> left;
  for (Pending* p : mine) {
    const collx_status_t st = wait ? collx_wait(&p->request) : collx_test(&p->request);
    if (st == COLLX_IN_PROGRESS) {
      left.push_back(p);
      continue;
    }
    if (st != COLLX_SUCCESS) report_failure(p->fn, " (request freed)");
    g_endings[kByOrphan].fetch_add(1, std::memory_order_relaxed);
    delete p;
  }
  if (left.empty()) return;
  std::lock_guard<std::mutex> lock(g_requests.mutex);
  g_requests.orphans.insert(g_requests.orphans.end(), left.begin(), left.end());
  g_requests.any_orphans.store(true, std::memory_order_relaxed);
}

}  // namespace collx_mpi
