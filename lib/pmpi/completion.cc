// The completion calls of libcollx_mpi.so (see collx_mpi.cc): MPI_Start and MPI_Startall run
// a served persistent request through libcollx (persistent.cc); MPI_Wait, MPI_Test and the
// other completion calls, MPI_Request_get_status, MPI_Request_free and MPI_Cancel see each
// request of ours as what MPI must see in its place (a Swap), and test or wait for its
// operation where MPICH would not (requests.cc). In C, and the mpi_f08 functions that call
// PMPI directly.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>

#include "pmpi/preload.h"

using namespace collx_mpi;

extern "C" {

int collx_MPI_Start(MPI_Request* request) {
  return guarded("MPI_Start", MPI_COMM_WORLD, nullptr, [&] { return start_persistent(request); });
}

// MPI_Startall starts them in any order: one at a time, in the array's.
int collx_MPI_Startall(int count, MPI_Request requests[]) {
  if (!any_persistent() || count <= 0 || requests == nullptr) {
    return PMPI_Startall(count, requests);
  }
  return guarded("MPI_Startall", MPI_COMM_WORLD, nullptr, [&] {
    for (int i = 0; i < count; ++i) {
      const int rc = start_persistent(&requests[i]);
      if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
  });
}

// MPI_Cancel of a persistent request of ours MPI runs on host copies, active (erroneous, as for
// any persistent collective request): MPI_ERR_REQUEST, as MPICH answers for a served one (it
// sees its own request, inactive); MPICH's own, active, would abort the process.
int collx_MPI_Cancel(MPI_Request* request) {
  if (request != nullptr && active_copied_persistent(*request)) {
    std::fprintf(stderr, "libcollx_mpi: MPI_Cancel of an active persistent collective request\n");
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_REQUEST);
    return MPI_ERR_REQUEST;
  }
  return PMPI_Cancel(request);
}

int collx_MPI_Request_free(MPI_Request* request) {
  return guarded("MPI_Request_free", MPI_COMM_WORLD, nullptr, [&] {
    if (request != nullptr) forget_persistent(*request);
    return PMPI_Request_free(request);
  });
}

// MPI_Wait and MPI_Test complete a persistent request of ours directly, and so does MPI_Waitall
// an array of ours only (MPI_Startall's batch); the other completion calls see an active one as
// its operation's generalized request (Swap). MPICH's MPI_Wait only
// polls a generalized request; collx_wait runs the operation on this thread if no thread has
// started it (far sooner, for a small one, than handing it over).
int collx_MPI_Wait(MPI_Request* request, MPI_Status* status) {
  return guarded("MPI_Wait", MPI_COMM_WORLD, nullptr, [&] {
    int rc = MPI_SUCCESS;
    if (complete_persistent(request, true, nullptr, status, &rc)) return rc;
    const Swap swap(1, request);
    advance_if_ours(swap.requests(), true);
    return PMPI_Wait(swap.requests(), status);
  });
}

int collx_MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  return guarded("MPI_Test", MPI_COMM_WORLD, nullptr, [&] {
    int rc = MPI_SUCCESS;
    if (complete_persistent(request, false, flag, status, &rc)) return rc;
    const Swap swap(1, request);
    return PMPI_Test(swap.requests(), flag, status);
  });
}

int collx_MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  return guarded("MPI_Waitall", MPI_COMM_WORLD, nullptr, [&] {
    int rc = MPI_SUCCESS;
    if (waitall_persistent(count, requests, statuses, &rc)) return rc;
    const Swap swap(count, requests);
    return PMPI_Waitall(count, swap.requests(), statuses);
  });
}

int collx_MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  return guarded("MPI_Testall", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(count, requests);
    return PMPI_Testall(count, swap.requests(), flag, statuses);
  });
}

int collx_MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  return guarded("MPI_Waitany", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(count, requests);
    return PMPI_Waitany(count, swap.requests(), index, status);
  });
}

int collx_MPI_Testany(int count, MPI_Request requests[], int* index, int* flag,
                      MPI_Status* status) {
  return guarded("MPI_Testany", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(count, requests);
    return PMPI_Testany(count, swap.requests(), index, flag, status);
  });
}

int collx_MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                       MPI_Status statuses[]) {
  return guarded("MPI_Waitsome", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(incount, requests);
    return PMPI_Waitsome(incount, swap.requests(), outcount, indices, statuses);
  });
}

int collx_MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                       MPI_Status statuses[]) {
  return guarded("MPI_Testsome", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(incount, requests);
    return PMPI_Testsome(incount, swap.requests(), outcount, indices, statuses);
  });
}

// MPICH's MPI_Request_get_status does not poll a generalized request: a served MPI_Iallreduce
// would never be reported complete. Its operation is tested first.
int collx_MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  return guarded("MPI_Request_get_status", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(1, &request);
    advance_if_ours(swap.requests(), false);
    return PMPI_Request_get_status(*swap.requests(), flag, status);
  });
}

// MPI_Wait of MPICH's mpi_f08 module, which calls PMPI_Wait itself (so the C MPI_Wait above
// never sees it): the same, then MPICH's own (the next definition after this library's).
// A TYPE(MPI_Request) is its handle, an MPI_Fint, which is MPICH's MPI_Request; the status
// and the optional ierror go to MPICH's as they came.
void collx_mpi_wait_f08_(MPI_Request* request, void* status, int* ierror) {
  using F08Wait = void (*)(MPI_Request*, void*, int*);
  static const auto next = reinterpret_cast<F08Wait>(dlsym(RTLD_NEXT, "mpi_wait_f08_"));
  if (next == nullptr) {  // (only MPICH's Fortran library calls this, and it defines it)
    if (ierror != nullptr) *ierror = MPI_ERR_INTERN;
    return;
  }
  const int rc = guarded("MPI_Wait", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(1, request, false);  // (mpi_f08's MPI_Start is MPI's own)
    advance_if_ours(swap.requests(), true);
    next(swap.requests(), status, ierror);
    return MPI_SUCCESS;
  });
  if (rc != MPI_SUCCESS && ierror != nullptr) *ierror = rc;
}

// MPI_Request_get_status of MPICH's mpi_f08 module, which calls PMPI_Request_get_status
// itself: the same as the C one above, then MPICH's own (the request, the LOGICAL flag, the
// status and the optional ierror go to it as they came).
void collx_mpi_request_get_status_f08_(MPI_Request* request, void* flag, void* status,
                                       int* ierror) {
  using F08GetStatus = void (*)(MPI_Request*, void*, void*, int*);
  static const auto next =
      reinterpret_cast<F08GetStatus>(dlsym(RTLD_NEXT, "mpi_request_get_status_f08_"));
  if (next == nullptr) {  // (only MPICH's Fortran library calls this, and it defines it)
    if (ierror != nullptr) *ierror = MPI_ERR_INTERN;
    return;
  }
  const int rc = guarded("MPI_Request_get_status", MPI_COMM_WORLD, nullptr, [&] {
    const Swap swap(1, request, false);
    advance_if_ours(swap.requests(), false);
    next(swap.requests(), flag, status, ierror);
    return MPI_SUCCESS;
  });
  if (rc != MPI_SUCCESS && ierror != nullptr) *ierror = rc;
}

// MPI_Request_free of MPICH's mpi_f08 module, which calls PMPI_Request_free itself: a
// persistent request of ours is forgotten first (MPI reuses the handle), then MPICH's own.
void collx_mpi_request_free_f08_(MPI_Request* request, int* ierror) {
  using F08Free = void (*)(MPI_Request*, int*);
  static const auto next = reinterpret_cast<F08Free>(dlsym(RTLD_NEXT, "mpi_request_free_f08_"));
  if (next == nullptr) {  // (only MPICH's Fortran library calls this, and it defines it)
    if (ierror != nullptr) *ierror = MPI_ERR_INTERN;
    return;
  }
  const int rc = guarded("MPI_Request_free", MPI_COMM_WORLD, nullptr, [&] {
    if (request != nullptr) forget_persistent(*request);
    next(request, ierror);
    return MPI_SUCCESS;
  });
  if (rc != MPI_SUCCESS && ierror != nullptr) *ierror = rc;
}

}  // extern "C"
