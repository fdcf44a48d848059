// Persistent allreduce under the preload (MPI 4.0: MPI_Allreduce_init, MPI_Allreduce_init_c).
// A served one is MPI's own persistent request, from PMPI_Allreduce_init, plus what libcollx
// needs to run it: MPI_Start starts a collx_iallreduce behind a generalized request
// (requests.cc), and while that operation is active every completion call sees its
// generalized request in place of the persistent one (Swap). MPICH has no persistent
// generalized request, hence the swap: a generalized request is freed by its completion, a
// persistent one only becomes inactive.
//
// MPI's own persistent request is the fallback. Inactive (or started by MPI), the request goes
// to MPI as it is. MPI starts it itself:
// - once the libcollx communicator is gone (MPI_Comm_free, MPI_Comm_disconnect or
//   MPI_Finalize; MPI keeps a freed communicator alive for its persistent requests);
// - wherever the start is not intercepted: mpi_f08's MPI_Start calls PMPI_Start itself.
// Every rank does the same in each case, so all run the operation the same way.
#include <cstdio>
#include <mutex>
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
  collx_comm_t comm = nullptr;  // null once the libcollx communicator is gone
  MPI_Comm mpi_comm = MPI_COMM_NULL;  // for errors (valid while `comm` is)
  MPI_Request active = MPI_REQUEST_NULL;  // the started operation's generalized request
};

std::mutex g_mutex;
std::unordered_map<MPI_Request, Persistent> g_persistent;  // by MPI's persistent request

void count_them() {  // under g_mutex
  g_persistent_count.store(static_cast<int>(g_persistent.size()), std::memory_order_relaxed);
}

// The arrays of a Swap on this thread (completion calls do not nest), kept for their capacity.
thread_local std::vector<MPI_Request> t_swapped;
thread_local std::vector<int> t_ours;

}  // namespace

void add_persistent(MPI_Request request, Fn fn, const void* sendbuf, void* recvbuf, size_t count,
                    collx_dtype_t dtype, collx_op_t op, collx_comm_t comm, MPI_Comm mpi_comm) {
  Persistent p;
  p.fn = fn;
  p.sendbuf = sendbuf;
  p.recvbuf = recvbuf;
  p.count = count;
  p.dtype = dtype;
  p.op = op;
  p.comm = comm;
  p.mpi_comm = mpi_comm;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_persistent[request] = p;  // (a handle MPI reuses replaces one freed behind our back)
  count_them();
}

int start_persistent(MPI_Request* request) {
  if (request == nullptr || !any_persistent()) return PMPI_Start(request);
  Persistent p;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_persistent.find(*request);
    if (it == g_persistent.end()) return PMPI_Start(request);
    p = it->second;
  }
  if (p.comm == nullptr) {
    g_starts[kByMpi].fetch_add(1, std::memory_order_relaxed);
    return PMPI_Start(request);
  }
  if (p.active != MPI_REQUEST_NULL) {  // (erroneous: MPI's error for an active request)
    std::fprintf(stderr, "libcollx_mpi: MPI_Start of a persistent %s that is active\n",
                 kFnNames[p.fn]);
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_REQUEST);  // (MPICH's handler for it)
    return MPI_ERR_REQUEST;
  }
  reap_orphans(false);
  collx_request_t op = nullptr;
  if (collx_iallreduce(p.sendbuf, p.recvbuf, p.count, p.dtype, p.op, p.comm, &op) !=
      COLLX_SUCCESS) {
    report_failure(p.fn, " (MPI_Start)");
    PMPI_Comm_call_errhandler(p.mpi_comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
  }
  g_starts[kByLibcollx].fetch_add(1, std::memory_order_relaxed);
  MPI_Request active = MPI_REQUEST_NULL;
  const int rc = start_request(p.fn, op, &active);
  if (rc != MPI_SUCCESS) return rc;  // (the operation has ended: the request stays inactive)
  std::lock_guard<std::mutex> lock(g_mutex);
  g_persistent[*request].active = active;  // (no other thread uses this request meanwhile)
  return MPI_SUCCESS;
}

void forget_persistent(MPI_Request request) {
  if (!any_persistent()) return;
  MPI_Request active = MPI_REQUEST_NULL;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_persistent.find(request);
    if (it == g_persistent.end()) return;
    active = it->second.active;
    g_persistent.erase(it);
    count_them();
  }
  // Freed while active: its operation goes on, and ends as a freed MPI_Iallreduce's does.
  if (active != MPI_REQUEST_NULL) PMPI_Request_free(&active);
}

void persistent_comm_gone(collx_comm_t comm) {
  if (comm == nullptr || !any_persistent()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& entry : g_persistent) {
    if (entry.second.comm == comm) entry.second.comm = nullptr;
  }
}

void Swap::swap_in(bool inactive_as_null) {
  std::lock_guard<std::mutex> lock(g_mutex);
  t_ours.clear();
  for (int i = 0; i < n_; ++i) {
    const auto it = g_persistent.find(requests_[i]);
    if (it == g_persistent.end()) continue;
    const Persistent& p = it->second;
    // Inactive, and libcollx's to start: seen as MPI_REQUEST_NULL (or else MPI's own).
    if (p.active == MPI_REQUEST_NULL && (!inactive_as_null || p.comm == nullptr)) continue;
    if (t_ours.empty()) t_swapped.assign(requests_, requests_ + n_);
    t_swapped[static_cast<size_t>(i)] = p.active;
    t_ours.push_back(i);
  }
  if (!t_ours.empty()) seen_ = t_swapped.data();
}

void Swap::swap_back() {
  const std::vector<int>& ours = t_ours;
  size_t next = 0;
  for (int i = 0; i < n_; ++i) {
    if (next < ours.size() && ours[next] == i) {
      ++next;
      continue;  // the persistent request stays in the program's array
    }
    requests_[i] = seen_[i];
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int i : ours) {
    if (seen_[i] != MPI_REQUEST_NULL) continue;  // not completed
    const auto it = g_persistent.find(requests_[i]);
    if (it != g_persistent.end()) it->second.active = MPI_REQUEST_NULL;  // inactive again
  }
}

}  // namespace collx_mpi
