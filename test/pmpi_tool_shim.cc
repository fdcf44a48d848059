// Test shim: a PMPI tool, as profilers and I/O tracers are (mpiP, Darshan, Score-P), preloaded
// beside libcollx_mpi.so in either order. It wraps MPI_Init, MPI_Init_thread and MPI_Finalize;
// its MPI_Finalize fails the process (exit status 3, after MPI's finalize) if its MPI_Init or
// MPI_Init_thread never ran: a library preloaded before it that called PMPI_Init itself would
// have skipped the tool's setup.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace {
int g_inits = 0;
}

extern "C" int MPI_Init(int* argc, char*** argv) {
  ++g_inits;
  return PMPI_Init(argc, argv);
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  ++g_inits;
  return PMPI_Init_thread(argc, argv, required, provided);
}

extern "C" int MPI_Finalize() {
  const int rc = PMPI_Finalize();
  if (g_inits != 1) {
    std::fprintf(stderr, "pmpi_tool_shim: the tool's MPI_Init ran %d times (want 1)\n", g_inits);
    std::exit(3);
  }
  return rc;
}
