! Probe of MPI_Iallreduce + MPI_Wait of one integer from Fortran (PERFORMANCE.md, "Completion
! by polling"): gfortran -O2 [-DUSE_MPI_F08 | -fallow-argument-mismatch]
!   -I/usr/include/x86_64-linux-gnu/mpich poll-probe-f08.F90 -lmpichfort -lmpich; run at 2 ranks,
! plain and with LD_PRELOAD=libcollx_mpi.so.
program fbench
#ifdef USE_MPI_F08
  use mpi_f08
  implicit none
  type(MPI_Request) :: req
#else
  use mpi
  implicit none
  integer :: req
#endif
  integer :: ierr, rank, i, rep, x(1)
  double precision :: t0, t1
  integer, parameter :: n = 20000
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  do rep = 1, 5
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    t0 = MPI_Wtime()
    do i = 1, n
      x(1) = i
      call MPI_Iallreduce(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    end do
    t1 = MPI_Wtime()
    if (rank == 0) print '("iallreduce + wait of 4 B: ",F8.2," us")', (t1 - t0) / n * 1d6
  end do
  call MPI_Finalize(ierr)
end program fbench
