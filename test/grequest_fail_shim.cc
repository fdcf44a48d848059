// Test shim (LD_PRELOAD, before libcollx_mpi.so) that makes the MPI library's
// PMPIX_Grequest_start fail once, as an MPI out of request objects would: call number
// GREQUEST_FAIL_AT (1, 2, ...) returns MPI_ERR_INTERN without making a request; the others go
// to the MPI library. The preload makes a generalized request for every served
// MPI_Iallreduce, so this reaches the path where it cannot (lib/pmpi/requests.cc, start()).
#include <dlfcn.h>
#include <mpi.h>

#include <cstdlib>

extern "C" int PMPIX_Grequest_start(MPI_Grequest_query_function* query,
                                    MPI_Grequest_free_function* free_fn,
                                    MPI_Grequest_cancel_function* cancel,
                                    MPIX_Grequest_poll_function* poll,
                                    MPIX_Grequest_wait_function* wait, void* state,
                                    MPI_Request* request) {
  using Fn = int (*)(MPI_Grequest_query_function*, MPI_Grequest_free_function*,
                     MPI_Grequest_cancel_function*, MPIX_Grequest_poll_function*,
                     MPIX_Grequest_wait_function*, void*, MPI_Request*);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "PMPIX_Grequest_start"));
  static int calls = 0;
  const char* at = std::getenv("GREQUEST_FAIL_AT");
  if (at != nullptr && ++calls == std::atoi(at)) return MPI_ERR_INTERN;
  return real(query, free_fn, cancel, poll, wait, state, request);
}
