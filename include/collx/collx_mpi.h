/* Bootstrap a libcollx communicator from an MPI communicator.
 *
 * Header-only so that libcollx itself does not depend on MPI: include it from code that
 * already links MPI. The communicator gets the same ranks as `mpi_comm`.
 */
#ifndef COLLX_COLLX_MPI_H
#define COLLX_COLLX_MPI_H

#include <mpi.h>

#include "collx/collx.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline int collx_mpi_oob_allgather(const void* send, void* recv, size_t bytes,
                                          void* ctx) {
  if (bytes > (size_t)INT32_MAX) return 1;
  MPI_Comm comm = *(MPI_Comm*)ctx;
  /* PMPI so that an allreduce interposer's own bootstrap is not intercepted. */
  return PMPI_Allgather((void*)send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, comm) ==
                 MPI_SUCCESS
             ? 0
             : 1;
}

static inline collx_status_t collx_comm_create_mpi(MPI_Comm mpi_comm, collx_comm_t* comm) {
  int rank = 0, size = 0;
  if (PMPI_Comm_rank(mpi_comm, &rank) != MPI_SUCCESS ||
      PMPI_Comm_size(mpi_comm, &size) != MPI_SUCCESS) {
    return COLLX_ERR_INVALID_ARG;
  }
  collx_comm_params_t params;
  params.rank = rank;
  params.size = size;
  params.allgather = collx_mpi_oob_allgather;
  params.allgather_ctx = &mpi_comm; /* used only during the call */
  return collx_comm_create(&params, comm);
}

#ifdef __cplusplus
}
#endif

#endif /* COLLX_COLLX_MPI_H */
