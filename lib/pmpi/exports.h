// The functions libcollx_mpi.so exports (its version script, collx_mpi.map, lets no other
// out), as X-macros. Each exported name is a jump (gate.cc) to libcollx_mpi's own function,
// collx_<name> (collx_mpi.cc, completion.cc), or, in a process whose MPI is not the library
// libcollx_mpi.so was built with, to that MPI's <name>, with the registers and stack as the
// program set them: Open MPI's handles are pointers where MPICH's are ints, so no C function
// built against MPICH's mpi.h could pass them on intact. Apart from preload.h (no mpi.h here)
// for the test that stands in for another MPI (test/foreign_mpi_test.cc).
#pragma once

#define COLLX_MPI_C_EXPORTS(X)                                                             \
  X(MPI_Init) X(MPI_Init_thread) X(MPI_Allreduce) X(MPI_Allreduce_c) X(MPI_Iallreduce)    \
  X(MPI_Iallreduce_c) X(MPI_Allreduce_init) X(MPI_Allreduce_init_c) X(MPI_Comm_free)      \
  X(MPI_Start) X(MPI_Startall) X(MPI_Cancel) X(MPI_Request_free) X(MPI_Wait) X(MPI_Test)  \
  X(MPI_Waitall) X(MPI_Testall) X(MPI_Waitany) X(MPI_Testany) X(MPI_Waitsome)             \
  X(MPI_Testsome) X(MPI_Request_get_status)
// MPICH's mpi_f08 functions that call PMPI directly.
#define COLLX_MPI_F08_EXPORTS(X)                                                       \
  X(mpi_wait_f08_) X(mpi_request_get_status_f08_) X(mpi_request_free_f08_)            \
  X(mpi_comm_free_f08_) X(mpi_allreduce_init_f08ts_) X(mpi_allreduce_init_f08ts_large_)
