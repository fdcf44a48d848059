// The libcollx communicator of each MPI communicator the preload serves: created by the first
// served call on it (bootstrapped with PMPI_Allgather on it, so it blocks until every member
// makes that call), cached on it in an attribute whose delete callback destroys it, so dups,
// splits and reordered communicators each get their own. The program's MPI_Comm_free deletes
// that attribute (release), and MPI_Finalize those left (finish_comms).
//
// Threads: under MPI_THREAD_MULTIPLE a libcollx communicator is created by whichever thread
// first reduces on it, possibly while other threads create theirs (libcollx agrees ids for
// concurrent creations: core/comm_ids.h); a thread that comes to a communicator being created
// waits for it (std::call_once). At MPI_Finalize the remaining ones are destroyed in the order
// of their ids, which every member of each agrees on (creation order may differ between
// processes when threads create them).
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "collx/collx_mpi.h"
#include "core/comm.h"
#include "pmpi/preload.h"
#include "topo/node.h"

namespace collx_mpi {

std::atomic<long long> g_free_failed{0};
std::atomic<long long> g_comms_made{0}, g_comms_crowded{0};
int g_machine_processes = 0;

namespace {

struct Cached {
  std::atomic<bool> ready{false};  // `comm` is final (checked first: no call_once per call)
  std::once_flag created;
  collx_comm_t comm = nullptr;  // null: creation failed, always pass through
};

// The attribute of a communicator whose Cached this process found no memory for: it refused
// the libcollx creation (collx::Comm::refuse), which fails its peers' too, and every member
// passes that communicator's calls through to MPI. Not on g_comms, never deleted.
Cached g_refused{true, {}, nullptr};

std::atomic<int> g_keyval{MPI_KEYVAL_INVALID};  // valid from start_comms to finish_comms
std::mutex g_mutex;             // guards g_comms (not held while creating or destroying)
std::vector<MPI_Comm> g_comms;  // those with a Cached attribute

int keyval() { return g_keyval.load(std::memory_order_acquire); }

// Runs from the program's MPI_Comm_free (release), from MPI_Finalize (finish_comms), or when
// MPICH frees the communicator by other means (MPI_Comm_disconnect).
int delete_attr(MPI_Comm mpi_comm, int, void* value, void*) {
  auto* c = static_cast<Cached*>(value);
  if (c == &g_refused) return MPI_SUCCESS;
  // Collective, like MPI_Comm_free, and as that may wait for the other members, MPI's own
  // operations progress meanwhile (a member may first wait for one of them). A failure (a
  // member gone, the deadline passed) is the libcollx communicator's alone: MPI's own is
  // freed all the same, so it is only reported. One that failed earlier is freed at once; its
  // error was reported by the call it failed.
  const MpiProgress progress;
  persistent_comm_gone(c->comm);  // (MPI runs the persistent requests on it from now on)
  const collx_status_t st = c->comm != nullptr ? collx_comm_destroy(c->comm) : COLLX_SUCCESS;
  if (st != COLLX_SUCCESS && st != COLLX_ERR_COMM_FAILED) {
    std::fprintf(stderr, "libcollx_mpi: freeing a libcollx communicator failed: %s\n",
                 collx_last_error());
    g_free_failed.fetch_add(1);
  }
  delete c;
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = std::find(g_comms.begin(), g_comms.end(), mpi_comm);
  if (it != g_comms.end()) g_comms.erase(it);
  return MPI_SUCCESS;
}

Cached* cached_on(MPI_Comm comm) {
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, keyval(), &value, &found);
  return found ? static_cast<Cached*>(value) : nullptr;
}

// The order in which MPI_Finalize destroys what remains: by libcollx id (agreed by the members
// of each communicator); those without a libcollx communicator need no other rank.
uint32_t destroy_order(MPI_Comm comm) {
  const Cached* c = cached_on(comm);
  if (c == nullptr || c->comm == nullptr) return 0;
  return 1u + reinterpret_cast<const collx::Comm*>(c->comm)->id();
}

// For the first communicator whose calls this process passes through because no libcollx
// communicator could be made for it, its rank 0 says why on stderr (its members fail alike: a
// setting its ranks cannot run, such as an algorithm forced that needs them on one node, or a
// member out of memory); the statistics count all such calls ("communicator unusable").
std::atomic<bool> g_said_unusable{false};
void say_unusable(MPI_Comm comm) {
  int rank = 0, size = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  if (rank != 0 || g_said_unusable.exchange(true)) return;
  std::fprintf(stderr,
               "libcollx_mpi: calls on a communicator of %d ranks pass through to MPI "
               "(said for the first such communicator of each process): %s\n",
               size, collx_last_error());
}

}  // namespace

void start_comms(bool from_init) {
  int k = MPI_KEYVAL_INVALID;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_attr, &k, nullptr);
  g_keyval.store(k, std::memory_order_release);
  // A libcollx communicator counts the processes of its machine that its process has seen
  // (collx::NodeProcesses) for its watch period; one made of some of them before any larger
  // one (a program whose first served call is on a sub-communicator) would count only its
  // own. So MPI_Init, which every process of MPI_COMM_WORLD calls, counts them all.
  MPI_Comm machine = MPI_COMM_NULL;
  if (!from_init || PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                         &machine) != MPI_SUCCESS) {
    return;
  }
  PMPI_Comm_size(machine, &g_machine_processes);
  PMPI_Comm_free(&machine);
  collx::node_processes().note_processes(g_machine_processes);
}

collx_comm_t collx_for(MPI_Comm comm) {
  Cached* c = cached_on(comm);
  if (c != nullptr && c->ready.load(std::memory_order_acquire)) return c->comm;
  if (c == nullptr) {
    std::unique_lock<std::mutex> lock(g_mutex);
    c = cached_on(comm);  // (an erroneous program may get here from two threads at once)
    if (c == nullptr) {
      try {
        // (memory first: std::bad_alloc leaves nothing half made)
        g_comms.reserve(g_comms.size() + 1);
        auto made = std::make_unique<Cached>();
        PMPI_Comm_set_attr(comm, keyval(), made.get());
        c = made.release();
        g_comms.push_back(comm);
      } catch (const std::bad_alloc&) {
        PMPI_Comm_set_attr(comm, keyval(), &g_refused);
        lock.unlock();
        int rank = 0, size = 0;
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &size);
        const collx_comm_params_t params{rank, size, collx_mpi_oob_allgather, &comm};
        collx::Comm::refuse(params, COLLX_ERR_NO_MEMORY);
        return nullptr;
      }
    }
  }
  std::call_once(c->created, [&] {
    if (collx_comm_create_mpi(comm, &c->comm) != COLLX_SUCCESS) {
      c->comm = nullptr;
      say_unusable(comm);
    } else {
      tally(g_comms_made);
      const auto* made = reinterpret_cast<const collx::Comm*>(c->comm);
      if (made->watch_period() == collx::kCrowdedWatch) tally(g_comms_crowded);
    }
    c->ready.store(true, std::memory_order_release);
  });
  return c->comm;
}

// Deleting the attribute in MPI_Comm_free frees the libcollx communicator there, where every
// member frees it in the same order as its other collectives. (MPICH runs a communicator's
// delete callbacks only once no request holds it: left to MPICH, a rank with a request of
// MPI's own pending on it would free its part at that request's completion, while the others
// wait for it in MPI_Comm_free.)
// Only a communicator on the list is looked at: an invalid handle (an erroneous call) gets
// MPI's own error from PMPI_Comm_free, not one from an attribute lookup.
void release(MPI_Comm comm) {
  if (keyval() == MPI_KEYVAL_INVALID) return;  // (not started, or finished)
  // (Freeing these is an error, which MPI reports.)
  if (comm == MPI_COMM_NULL || comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (std::find(g_comms.begin(), g_comms.end(), comm) == g_comms.end()) return;
  }
  PMPI_Comm_delete_attr(comm, keyval());
}

// (In MPI_COMM_SELF's delete callback: allocates nothing.)
void finish_comms() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::sort(g_comms.begin(), g_comms.end(),
              [](MPI_Comm a, MPI_Comm b) { return destroy_order(a) < destroy_order(b); });
  }
  // First to last: each deletion takes its communicator off the list.
  for (;;) {
    MPI_Comm comm = MPI_COMM_NULL;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (g_comms.empty()) break;
      comm = g_comms.front();
    }
    PMPI_Comm_delete_attr(comm, keyval());
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_comms.empty() && g_comms.front() == comm) g_comms.erase(g_comms.begin());
  }
  int k = g_keyval.exchange(MPI_KEYVAL_INVALID);
  PMPI_Comm_free_keyval(&k);
}

}  // namespace collx_mpi
