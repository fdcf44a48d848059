// The statistics of libcollx_mpi.so (COLLX_MPI_VERBOSE=1): per function, how many calls were
// served and why the others passed through, printed by rank 0 at MPI_Finalize, summed over the
// ranks (run_preloaded.sh reads them), with how served non-blocking operations ended, how
// served persistent requests were started, failed frees, rank 0's machine's processes and
// CPUs, and the libcollx communicators made (and those that found their machine crowded).
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <iterator>

#include "api/status.h"
#include "core/comm.h"
#include "pmpi/preload.h"
#include "topo/topo.h"

namespace collx_mpi {

namespace {

const char* const kReasonNames[] = {"served by libcollx", "invalid arguments", "COLLX_MPI=0",
                                    "libcollx not initialised",
                                    "intercommunicator", "datatype", "op",
                                    "communicator unusable"};
static_assert(std::size(kReasonNames) == kReasonCount);

// What MPI_Finalize prints for one function (COLLX_MPI_VERBOSE): `total` holds the calls per
// reason, then the failed ones, then those passed through on host copies, summed over the
// ranks.
void print_counts(const char* fn, const long long* total) {
  long long passed = 0;
  for (int i = 1; i < kReasonCount; ++i) passed += total[i];
  std::fprintf(stderr, "libcollx_mpi: %s calls (all ranks): %lld served, %lld passed through\n",
               fn, total[kServed], passed);
  if (total[kReasonCount] > 0) {
    std::fprintf(stderr, "libcollx_mpi:   %lld of the served calls failed\n", total[kReasonCount]);
  }
  for (int i = 1; i < kReasonCount; ++i) {
    if (total[i] > 0) {
      std::fprintf(stderr, "libcollx_mpi:   %lld passed through: %s\n", total[i],
                   kReasonNames[i]);
    }
  }
  if (total[kReasonCount + 1] > 0) {
    std::fprintf(stderr, "libcollx_mpi:   %lld of the passed-through calls on host copies\n",
                 total[kReasonCount + 1]);
  }
}

}  // namespace

Counts g_counts[kFnCount];
bool g_thread_multiple = false;

void report_failure(Fn fn, const char* context) {
  tally(g_counts[fn].failed);
  // (a persistent request's operation fails in a completion call, long after the init)
  const bool persistent = fn == kAllreduceInit || fn == kAllreduceInitC;
  if (persistent && context[0] == '\0') context = " operation (started by MPI_Start)";
  std::fprintf(stderr, "libcollx_mpi: %s%s failed: %s\n", kFnNames[fn], context,
               collx_last_error());
}

int exception_error(const char* fn, MPI_Comm comm) {
  // libcollx's own reading of the exception ("MPI_Iallreduce: out of memory"; a message that
  // finds no memory is left empty, the code kept).
  const collx::Status st = collx::exception_status(fn);
  const int rc = st.code() == COLLX_ERR_NO_MEMORY ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
  if (st.message().empty()) {
    std::fprintf(stderr, "libcollx_mpi: %s: %s\n", fn, collx::status_name(st.code()));
  } else {
    std::fprintf(stderr, "libcollx_mpi: %s\n", st.message().c_str());
  }
  PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

void print_statistics() {
  // Per function: the calls per reason, then the failed ones, then the copied ones; then
  // how the served non-blocking operations ended; then the starts of served persistent
  // requests; then the failed frees, the communicators made and the crowded ones.
  constexpr int kPer = kReasonCount + 2, kEndings = kFnCount * kPer;
  constexpr int kStarts = kEndings + kEndingCount, kFrees = kStarts + kStarterCount;
  constexpr int kAll = kFrees + 3;
  long long local[kAll] = {}, total[kAll] = {};
  for (int f = 0; f < kFnCount; ++f) {
    for (int i = 0; i < kReasonCount; ++i) local[f * kPer + i] = g_counts[f].calls[i].load();
    local[f * kPer + kReasonCount] = g_counts[f].failed.load();
    local[f * kPer + kReasonCount + 1] = g_copied[f].load();
  }
  for (int e = 0; e < kEndingCount; ++e) local[kEndings + e] = g_endings[e].load();
  for (int b = 0; b < kStarterCount; ++b) local[kStarts + b] = g_starts[b].load();
  local[kFrees] = g_free_failed.load();
  local[kFrees + 1] = g_comms_made.load();
  local[kFrees + 2] = g_comms_crowded.load();
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Reduce(local, total, kAll, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    // MPI_Allreduce's always (a program that never calls it shows zeros), the others' if
    // they were called.
    for (int f = 0; f < kFnCount; ++f) {
      long long calls = 0;
      for (int i = 0; i < kReasonCount; ++i) calls += total[f * kPer + i];
      if (f == kAllreduce || calls > 0) print_counts(kFnNames[f], total + f * kPer);
    }
    const long long* ended = total + kEndings;
    if (ended[kByWait] + ended[kByWaitFn] + ended[kByPoll] + ended[kByOrphan] > 0) {
      std::fprintf(stderr,
                   "libcollx_mpi: served non-blocking operations (MPI_Iallreduce, MPI_Start; "
                   "all ranks) ended in: MPI_Wait %lld, MPI_Waitall %lld, polling %lld, "
                   "freed requests %lld\n",
                   ended[kByWait], ended[kByWaitFn], ended[kByPoll], ended[kByOrphan]);
    }
    const long long* started = total + kStarts;
    if (started[kByLibcollx] + started[kByMpi] > 0) {
      std::fprintf(stderr,
                   "libcollx_mpi: served persistent requests started (all ranks): %lld by "
                   "libcollx, %lld by MPI (their communicator freed)\n",
                   started[kByLibcollx], started[kByMpi]);
    }
    if (total[kFrees] > 0) {
      std::fprintf(stderr, "libcollx_mpi: %lld libcollx communicators failed to be freed\n",
                   total[kFrees]);
    }
    if (g_machine_processes > 0) {
      std::fprintf(stderr, "libcollx_mpi: rank 0's machine: %d processes of MPI_COMM_WORLD, %d "
                   "CPUs to run on\n", g_machine_processes, collx::usable_cpus());
    }
    std::fprintf(stderr, "libcollx_mpi: libcollx communicators made (all ranks): %lld, %lld of "
                 "them on machines with more processes than CPUs (waking every %lld ms)\n",
                 total[kFrees + 1], total[kFrees + 2],
                 static_cast<long long>(collx::kCrowdedWatch.count() / 1000));
  }
}

}  // namespace collx_mpi
