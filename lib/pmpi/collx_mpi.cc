// libcollx_mpi.so: MPI_Allreduce, MPI_Iallreduce and MPI_Allreduce_init (and their
// large-count twins MPI_Allreduce_c, MPI_Iallreduce_c and MPI_Allreduce_init_c, MPI 4.0)
// through libcollx for unmodified MPI programs (MPICH ABI),
//   mpiexec -n 2 env LD_PRELOAD=.../libcollx_mpi.so ./app
//
// The preload starts in MPI_Init (or at its first call, if the program initialised MPI
// through PMPI_Init) and finishes in a delete callback on MPI_COMM_SELF, which MPI_Finalize
// runs first of all (so it finishes however the program finalises).
//
// Each MPI communicator served gets a libcollx communicator of its own, created by the first
// served call on it and freed in MPI_Comm_free (intercepted, in C and mpi_f08) or at
// MPI_Finalize (comms.cc). Contiguous predefined integer
// (C and Fortran), floating and byte types with sum/prod/min/max/band/bor/bxor (as MPI allows
// them by type), and complex types with sum (the sums of their parts), take the fast path;
// everything else, and
// everything while libcollx cannot serve, goes to PMPI_Allreduce unchanged, but for device
// buffers, which go through host copies (passthrough.cc): MPI_Allreduce is CUDA-aware under
// the preload.
//
// MPI_Iallreduce: a served call is a collx_iallreduce behind an MPICH generalized request
// (requests.cc), so every MPI completion call accepts it. MPICH's MPI_Wait would only poll
// it, so MPI_Wait is intercepted too (the C one, and mpi_f08's, which calls PMPI_Wait
// itself): for a request of ours it calls collx_wait first. MPICH's MPI_Request_get_status
// would not even poll it, so it is intercepted likewise (C and mpi_f08), testing the operation
// once. These and the other completion calls are in completion.cc. The first call on a
// communicator without a libcollx communicator creates one, which blocks until every member
// makes that call (as the first MPI_Allreduce does). Passed-through calls go to
// PMPI_Iallreduce, on host copies of device buffers whose result is copied back when the
// operation completes (requests.cc: MPI_Iallreduce is CUDA-aware too). The datatypes and ops
// served are in types.cc.
//
// MPI_Allreduce_init: a served call is MPI's own persistent request, which MPI_Start and
// MPI_Startall run through libcollx; MPI_Wait, MPI_Test and MPI_Waitall (on an array of ours)
// complete it directly, and the other completion calls (intercepted for this) see a
// generalized request in its place (persistent.cc). A passed-through one on device buffers is
// MPI's persistent request made on host copies, which MPI_Start makes again and its
// completion copies back (passthrough.cc, persistent.cc); from mpi_f08 (whose MPI_Start is
// PMPI_Start) it is refused.
//
// Threads: under MPI_THREAD_MULTIPLE every communicator is served as well (comms.cc: their
// creation from several threads at once).
//
// The functions defined here and in completion.cc are collx_<name>: the exported <name> is a
// jump to them (gate.cc), or, in a process of another MPI than the one libcollx_mpi.so was
// built with (Open MPI, whose handles are pointers), to that MPI's own.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <mutex>

#include "core/config.h"
#include "pmpi/preload.h"

namespace collx_mpi {

const char* const kFnNames[kFnCount] = {"MPI_Allreduce",      "MPI_Iallreduce",
                                        "MPI_Allreduce_c",    "MPI_Iallreduce_c",
                                        "MPI_Allreduce_init", "MPI_Allreduce_init_c"};

namespace {

struct State {
  bool enabled = false;  // interception on and libcollx initialised
  bool verbose = false;
  Reason off_reason = kNotReady;
};
State g;

// Reads the configuration into *config (*settings: how that went) and starts libcollx:
// whether interception can be on in this process (if not, g.off_reason says why, and a reason
// was said on stderr or, for malformed settings, is *settings, for start() to say once).
bool start_libcollx(collx::Config* config, collx::Status* settings) {
  try {
    *settings = collx::load_config(config);
  } catch (const std::bad_alloc&) {  // (this process's alone: said by it)
    std::fprintf(stderr, "libcollx_mpi: interception off: out of memory reading the settings\n");
    return false;
  }
  if (!settings->ok()) return false;
  g.verbose = config->mpi_verbose;
  if (!config->mpi) {
    g.off_reason = kDisabled;
    return false;
  }
  if (collx_init() != COLLX_SUCCESS) {  // (this process's: said by it)
    std::fprintf(stderr, "libcollx_mpi: interception off: %s\n", collx_last_error());
    return false;
  }
  return true;
}

// Starts the preload (once, with MPI initialised). In every case it sets an attribute on
// MPI_COMM_SELF whose delete callback, finish(), runs at the start of MPI_Finalize, MPI still
// working (MPI's hook for libraries: it runs however the program finalises, even through a
// binding that calls PMPI_Finalize directly). `from_init`: called by MPI_Init or
// MPI_Init_thread, which every process of MPI_COMM_WORLD calls: then the processes agree, and
// interception is on in all of them or in none. On in some and off in others, their
// collectives would pair wrongly (a served call's bootstrap against MPI's own allreduce): one
// process's libcollx that ran out of memory, or COLLX_MPI=0 in one process's environment.
int finish(MPI_Comm, int, void*, void*);
void start(int provided, bool from_init) {
  int self_keyval = MPI_KEYVAL_INVALID;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finish, &self_keyval, nullptr);
  PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, nullptr);
  g_thread_multiple = provided == MPI_THREAD_MULTIPLE;
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  collx::Config config;
  collx::Status settings;
  const bool on = start_libcollx(&config, &settings);
  const bool malformed = !settings.ok();
  // (The statistics too are printed by every process or none: a reduction at MPI_Finalize.)
  // [2]: the lowest rank whose settings are malformed (size if none), which says why; the same
  // settings everywhere, as a rule, are said once.
  int mine[3] = {on ? 1 : 0, g.verbose ? 1 : 0, malformed ? rank : size};
  int all[3] = {mine[0], mine[1], mine[2]};
  if (from_init && PMPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) {
    all[0] = all[1] = 0;
  }
  g.verbose = all[1] != 0;
  if (malformed && rank == 0) {
    std::fprintf(stderr, "libcollx_mpi: interception off: %s\n", settings.message().c_str());
  } else if (malformed && from_init && all[2] == rank) {
    std::fprintf(stderr, "libcollx_mpi: interception off: rank %d's settings: %s\n", rank,
                 settings.message().c_str());
  }
  if (on && all[0] == 0) {
    collx_finalize();
    if (rank == 0 && all[2] == size) {
      std::fprintf(stderr,
                   "libcollx_mpi: interception off: it is off in another process (COLLX_MPI=0, "
                   "or libcollx could not start there)\n");
    }
  }
  if (all[0] == 0) return;
  start_comms(from_init);
  load_types();
  set_host_copies(config.mpi_host_copies ? kAllBuffers : kDeviceBuffers);
  g.enabled = true;
}

// Runs start() once MPI is initialised: from MPI_Init or MPI_Init_thread, or else from the
// first intercepted call (MPICH's mpi_f08 bindings initialise through PMPI_Init directly).
std::once_flag g_start_once;
std::atomic<bool> g_started{false};

void ensure_started(bool from_init = false) {
  if (g_started.load(std::memory_order_acquire)) return;
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (!initialized || finalized) return;  // (an erroneous call: MPI's own error follows)
  std::call_once(g_start_once, [from_init] {
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    start(provided, from_init);
    g_started.store(true, std::memory_order_release);
  });
}

// Whether a call is served, and if so as which libcollx type and op, with `*lanes` elements of
// that type per MPI element (2 for complex types). An invalid communicator handle (a freed
// one, say) is MPI's error, which MPI has already reported through its handler when asked
// whether it is an intercommunicator: that error, in *comm_error, is the call's answer (passed
// through, the handler would be called a second time).
Reason classify(MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, collx_dtype_t* d,
                collx_op_t* o, size_t* lanes, int* comm_error) {
  if (!g.enabled) return g.off_reason;
  int inter = 0;
  if (comm == MPI_COMM_NULL) return kIntercomm;  // (MPI's own error follows)
  *comm_error = PMPI_Comm_test_inter(comm, &inter);
  if (*comm_error != MPI_SUCCESS) return kArgs;
  if (inter) return kIntercomm;
  Kind kind = kSigned;
  if (!to_dtype(datatype, d, &kind)) return kDatatype;
  if (!to_op(op, kind, o)) return kOp;
  *lanes = kind == kComplex ? 2 : 1;
  return kServed;
}

// How a call of `fn` goes (counted in the statistics): why it passes through, or as which
// libcollx type, op and count, from which send buffer, on which libcollx communicator.
// `null_request`: a non-blocking call's request argument is null (MPI's error).
struct Decision {
  Reason why = kNotReady;
  int error = MPI_SUCCESS;  // not MPI_SUCCESS: the call's answer (MPI reported it already)
  collx_dtype_t dtype = COLLX_INT8;
  collx_op_t op = COLLX_SUM;
  size_t count = 0;               // libcollx elements
  const void* sendbuf = nullptr;  // COLLX_IN_PLACE for MPI_IN_PLACE
  collx_comm_t comm = nullptr;
};
Decision decide(Fn fn, const void* sendbuf, const void* recvbuf, MPI_Count count,
                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, bool null_request = false) {
  ensure_started();
  Decision x;
  size_t lanes = 1;
  x.why = classify(datatype, op, comm, &x.dtype, &x.op, &lanes, &x.error);
  if (x.why == kServed && (mpi_rejects(sendbuf, recvbuf, count) || null_request)) x.why = kArgs;
  if (x.why == kServed && (x.comm = collx_for(comm)) == nullptr) x.why = kCommFailed;
  count_call(fn, x.why);
  x.count = static_cast<size_t>(count) * lanes;
  x.sendbuf = sendbuf == MPI_IN_PLACE ? COLLX_IN_PLACE : sendbuf;
  return x;
}

// MPI_Allreduce and MPI_Allreduce_c (`fn`).
int allreduce(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
              MPI_Op op, MPI_Comm comm) {
  const Decision x = decide(fn, sendbuf, recvbuf, count, datatype, op, comm);
  if (x.error != MPI_SUCCESS) return x.error;
  if (x.why != kServed) return pmpi_allreduce(fn, sendbuf, recvbuf, count, datatype, op, comm);
  const MpiProgress progress;
  const collx_status_t st = collx_allreduce(x.sendbuf, recvbuf, x.count, x.dtype, x.op, x.comm);
  if (st == COLLX_SUCCESS) return MPI_SUCCESS;
  // As MPI does: through the communicator's error handler (fatal by default).
  report_failure(fn);
  PMPI_Comm_call_errhandler(comm, mpi_error(st));
  return mpi_error(st);
}

// MPI_Iallreduce and MPI_Iallreduce_c (`fn`).
int iallreduce(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const Decision x =
      decide(fn, sendbuf, recvbuf, count, datatype, op, comm, request == nullptr);
  if (x.error != MPI_SUCCESS) return x.error;
  if (x.why != kServed) {
    return pmpi_iallreduce(fn, sendbuf, recvbuf, count, datatype, op, comm, request);
  }
  reap_orphans(false);
  collx_request_t r = nullptr;
  const collx_status_t st =
      collx_iallreduce(x.sendbuf, recvbuf, x.count, x.dtype, x.op, x.comm, &r);
  if (st != COLLX_SUCCESS) {
    report_failure(fn);
    *request = MPI_REQUEST_NULL;
    PMPI_Comm_call_errhandler(comm, mpi_error(st));
    return mpi_error(st);
  }
  return start_request(fn, r, request);
}

// Set while mpi_f08's MPI_Allreduce_init runs (it calls the C one).
thread_local bool t_in_f08_init = false;

// mpi_f08's MPI_Allreduce_init (MPICH's own, `next`), marked as such. Its nine arguments, all
// pointers (two buffer descriptors, count, datatype, op, comm, info, request, ierror), go to
// it as they came.
using F08Init = void (*)(void*, void*, void*, void*, void*, void*, void*, void*, void*);
void f08_init(F08Init next, void* a, void* b, void* c, void* d, void* e, void* f, void* g,
              void* h, void* ierror) {
  if (next == nullptr) {  // (only MPICH's Fortran library calls this, and it defines it)
    if (ierror != nullptr) *static_cast<int*>(ierror) = MPI_ERR_INTERN;
    return;
  }
  t_in_f08_init = true;
  next(a, b, c, d, e, f, g, h, ierror);
  t_in_f08_init = false;
}

// MPI_Allreduce_init and MPI_Allreduce_init_c (`fn`): MPI's own persistent request in every
// case; a served one is also ours (persistent.cc), which MPI_Start runs through libcollx.
int allreduce_init(Fn fn, const void* sendbuf, void* recvbuf, MPI_Count count,
                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                   MPI_Request* request) {
  const Decision x =
      decide(fn, sendbuf, recvbuf, count, datatype, op, comm, request == nullptr);
  if (x.error != MPI_SUCCESS) return x.error;
  if (x.why != kServed && needs_host_copies(sendbuf, recvbuf, count)) {
    // A request MPI runs on host copies needs its copies made at every start, which mpi_f08's
    // MPI_Start (PMPI_Start) would not do: device buffers are refused there, rather than given
    // to an MPI library that may not be CUDA-aware.
    if (!t_in_f08_init) {
      return pmpi_allreduce_init(fn, sendbuf, recvbuf, count, datatype, op, comm, info, request);
    }
    std::fprintf(stderr,
                 "libcollx_mpi: %s of device buffers with a type or op libcollx does not serve, "
                 "from mpi_f08: not supported (MPI_ERR_BUFFER)\n",
                 kFnNames[fn]);
    if (request != nullptr) *request = MPI_REQUEST_NULL;
    PMPI_Comm_call_errhandler(comm, MPI_ERR_BUFFER);
    return MPI_ERR_BUFFER;
  }
  const int rc =
      fn == kAllreduceInitC
          ? PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request)
          : PMPI_Allreduce_init(sendbuf, recvbuf, static_cast<int>(count), datatype, op, comm,
                                info, request);
  if (x.why == kServed && rc == MPI_SUCCESS) {
    add_persistent(*request, fn, x.sendbuf, recvbuf, x.count, x.dtype, x.op, x.comm);
  }
  return rc;
}

// MPI_COMM_SELF's delete callback (set by start): at the start of MPI_Finalize, after the
// program's own callbacks on MPI_COMM_SELF (MPI deletes them in the reverse order of setting),
// ends the operations of freed requests, destroys the libcollx communicators left, and prints
// the statistics. Calls after it go to the MPI library.
int finish(MPI_Comm, int, void*, void*) {
  if (g.enabled) {
    reap_orphans(true);
    finish_comms();
    set_host_copies(kNoBuffers);
    collx_finalize();
    g.enabled = false;
    g.off_reason = kNotReady;
  }
  if (g.verbose) print_statistics();
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace collx_mpi

using namespace collx_mpi;

extern "C" {

// MPI_Init and MPI_Init_thread call the next definition of their name: a PMPI tool preloaded
// after this library (a profiler: its own setup runs, as without the preload), else MPI's.
int collx_MPI_Init(int* argc, char*** argv) {
  if (late_foreign_mpi()) return MPI_ERR_OTHER;
  static const auto next = reinterpret_cast<decltype(&PMPI_Init)>(dlsym(RTLD_NEXT, "MPI_Init"));
  const int rc = (next != nullptr ? next : PMPI_Init)(argc, argv);
  if (rc == MPI_SUCCESS) ensure_started(true);
  return rc;
}

int collx_MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  if (late_foreign_mpi()) return MPI_ERR_OTHER;
  static const auto next =
      reinterpret_cast<decltype(&PMPI_Init_thread)>(dlsym(RTLD_NEXT, "MPI_Init_thread"));
  const int rc = (next != nullptr ? next : PMPI_Init_thread)(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) ensure_started(true);
  return rc;
}

int collx_MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm) {
  return guarded("MPI_Allreduce", comm, nullptr, [&] {
    return allreduce(kAllreduce, sendbuf, recvbuf, count, datatype, op, comm);
  });
}

int collx_MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return guarded("MPI_Allreduce_c", comm, nullptr, [&] {
    return allreduce(kAllreduceC, sendbuf, recvbuf, count, datatype, op, comm);
  });
}

int collx_MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return guarded("MPI_Iallreduce", comm, request, [&] {
    return iallreduce(kIallreduce, sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}

int collx_MPI_Iallreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return guarded("MPI_Iallreduce_c", comm, request, [&] {
    return iallreduce(kIallreduceC, sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}

int collx_MPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return guarded("MPI_Allreduce_init", comm, request, [&] {
    return allreduce_init(kAllreduceInit, sendbuf, recvbuf, count, datatype, op, comm, info,
                          request);
  });
}

int collx_MPI_Allreduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                               MPI_Request* request) {
  return guarded("MPI_Allreduce_init_c", comm, request, [&] {
    return allreduce_init(kAllreduceInitC, sendbuf, recvbuf, count, datatype, op, comm, info,
                          request);
  });
}

int collx_MPI_Comm_free(MPI_Comm* comm) {
  if (comm != nullptr) release(*comm);
  return PMPI_Comm_free(comm);
}

// MPI_Comm_free of MPICH's mpi_f08 module, which calls PMPI_Comm_free itself: the same, then
// MPICH's own (a TYPE(MPI_Comm) is its handle, an MPI_Fint, which is MPICH's MPI_Comm).
void collx_mpi_comm_free_f08_(MPI_Comm* comm, int* ierror) {
  using F08Free = void (*)(MPI_Comm*, int*);
  static const auto next = reinterpret_cast<F08Free>(dlsym(RTLD_NEXT, "mpi_comm_free_f08_"));
  if (next == nullptr) {  // (only MPICH's Fortran library calls this, and it defines it)
    if (ierror != nullptr) *ierror = MPI_ERR_INTERN;
    return;
  }
  if (comm != nullptr) release(*comm);
  next(comm, ierror);
}

// MPI_Allreduce_init of MPICH's mpi_f08 module (and its large-count twin), which calls the C
// MPI_Allreduce_init: MPICH's own, marked as mpi_f08's (f08_init).
void collx_mpi_allreduce_init_f08ts_(void* a, void* b, void* c, void* d, void* e, void* f, void* g,
                                     void* h, void* ierror) {
  static const auto next = reinterpret_cast<F08Init>(dlsym(RTLD_NEXT, "mpi_allreduce_init_f08ts_"));
  f08_init(next, a, b, c, d, e, f, g, h, ierror);
}
void collx_mpi_allreduce_init_f08ts_large_(void* a, void* b, void* c, void* d, void* e, void* f,
                                           void* g, void* h, void* ierror) {
  static const auto next =
      reinterpret_cast<F08Init>(dlsym(RTLD_NEXT, "mpi_allreduce_init_f08ts_large_"));
  f08_init(next, a, b, c, d, e, f, g, h, ierror);
}

}  // extern "C"
