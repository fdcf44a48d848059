! An ordinary Fortran MPI program (`use mpi`, or `use mpi_f08` built with -DUSE_MPI_F08; no
! libcollx calls) for the PMPI interposer: MPICH's Fortran bindings call the C MPI_Allreduce and
! MPI_Iallreduce, so the preload serves Fortran's types (and MPI_Wait: `use mpi`'s calls the C
! one, mpi_f08's, which calls PMPI_Wait, is intercepted itself). Run it plain and with
! LD_PRELOAD=libcollx_mpi.so; both runs must produce exactly the expected results. Covers
! MPI_INTEGER (in place), MPI_REAL, MPI_DOUBLE_PRECISION, MPI_DOUBLE_COMPLEX (in place),
! MPI_INTEGER8, MPI_Iallreduce with
! MPI_Wait (and under mpi_f08 MPI_Wait with a status and no ierror), with
! MPI_Request_get_status then MPI_Wait, and with MPI_Waitall,
! a persistent allreduce (MPI_Allreduce_init, MPI_Start, MPI_Wait, MPI_Request_free), served
! and passed through (MPI_LOGICAL, MPI_LAND: under COLLX_MPI_HOST_COPIES=1 `use mpi`'s goes
! through host copies, mpi_f08's is refused),
! MPI_Comm_free with a request of MPI's own pending, and MPI_LOGICAL with MPI_LAND (which must
! pass through). Prints "N passed, N failed" on rank 0;
! exit status 1 on any failure.
program pmpi_fortran
#ifdef USE_MPI_F08
  use mpi_f08
  implicit none
  type(MPI_Request) :: reqs(2), preq
  type(MPI_Status) :: st
  type(MPI_Comm) :: dup
#else
  use mpi
  implicit none
  integer :: reqs(2), preq, dup
#endif
  integer, parameter :: n = 100003
  integer :: ierr, rank, p, i, r, k, passed, failed, tally(2), total(2)
  integer :: want_x
  ! Buffers of non-blocking and persistent calls: written (or read) by the completing call,
  ! which the compiler does not see take them (MPI's ASYNCHRONOUS problem)
  integer, volatile :: iv(n), xv(n)
  real, volatile :: rs(n), rv(n)
  double precision :: ds(n), dv(n)
  integer(kind=8) :: ls(n), lv(n)
  double complex :: zv(n)
  logical :: flag, all_flag, refused
  logical, volatile :: lp(2), lp_all(2), l_in, l_out
  character(len=8) :: copies_env
  character(len=512) :: preload_env
  integer :: cls, ierr2
  double precision :: t0

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  passed = 0
  failed = 0

  ! MPI_INTEGER sum, in place.
  do i = 1, n
    iv(i) = mod(i, 1000) + 7 * rank
  end do
  call MPI_Allreduce(MPI_IN_PLACE, iv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. all([(iv(i) == p * mod(i, 1000) + 7 * p * (p - 1) / 2, &
             i = 1, n)]), 'MPI_INTEGER sum in place')

  ! MPI_REAL sum, out of place (small integers: exact in any order).
  do i = 1, n
    rs(i) = real(mod(i, 100) + rank)
  end do
  rv = -1.0
  call MPI_Allreduce(rs, rv, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. all([(rv(i) == real(p * mod(i, 100) + p * (p - 1) / 2), &
             i = 1, n)]), 'MPI_REAL sum')

  ! MPI_DOUBLE_PRECISION max.
  do i = 1, n
    ds(i) = dble(mod(i * 13 + rank * 7, 11)) - 5.0d0
  end do
  call MPI_Allreduce(ds, dv, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. all([(dv(i) == maxval([(dble(mod(i * 13 + r * 7, 11)) - &
             5.0d0, r = 0, p - 1)]), i = 1, n)]), 'MPI_DOUBLE_PRECISION max')

  ! MPI_DOUBLE_COMPLEX sum, in place (as plane-wave codes sum their coefficients; small
  ! integer parts: exact in any order).
  do i = 1, n
    zv(i) = dcmplx(dble(mod(i, 97) + rank), dble(mod(i, 13) - 3 * rank))
  end do
  call MPI_Allreduce(MPI_IN_PLACE, zv, n, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. all([(zv(i) == dcmplx(dble(p * mod(i, 97) + &
             p * (p - 1) / 2), dble(p * mod(i, 13) - 3 * p * (p - 1) / 2)), i = 1, n)]), &
             'MPI_DOUBLE_COMPLEX sum in place')

  ! MPI_INTEGER8 min, values beyond 32 bits.
  do i = 1, n
    ls(i) = int(mod(i + 3 * rank, 17), 8) * 10000000000_8 - int(rank, 8)
  end do
  call MPI_Allreduce(ls, lv, n, MPI_INTEGER8, MPI_MIN, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. all([(lv(i) == minval([(int(mod(i + 3 * r, 17), 8) * &
             10000000000_8 - int(r, 8), r = 0, p - 1)]), i = 1, n)]), 'MPI_INTEGER8 min')

  ! MPI_Iallreduce + MPI_Wait: MPI_INTEGER bxor.
  do i = 1, n
    xv(i) = ieor(mod(i, 30011) * 65521, rank * 40503)
  end do
  call MPI_Iallreduce(MPI_IN_PLACE, xv, n, MPI_INTEGER, MPI_BXOR, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  flag = ierr == MPI_SUCCESS .and. reqs(1) == MPI_REQUEST_NULL
  do i = 1, n
    want_x = 0
    do r = 0, p - 1
      want_x = ieor(want_x, ieor(mod(i, 30011) * 65521, r * 40503))
    end do
    flag = flag .and. xv(i) == want_x
  end do
  call check(flag, 'MPI_Iallreduce + MPI_Wait: MPI_INTEGER bxor')

  ! MPI_Iallreduce, then MPI_Request_get_status until it reports completion (mpi_f08's calls
  ! PMPI_Request_get_status, and is intercepted too), then MPI_Wait: MPI_INTEGER min.
  do i = 1, n
    xv(i) = mod(i * 5 + rank * 3, 1013)
  end do
  call MPI_Iallreduce(MPI_IN_PLACE, xv, n, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, reqs(1), ierr)
  flag = .false.
  t0 = MPI_Wtime()
  do
    call MPI_Request_get_status(reqs(1), flag, MPI_STATUS_IGNORE, ierr)
    if (flag) exit
    if (MPI_Wtime() - t0 > 20.0d0) exit
  end do
  call check(flag .and. ierr == MPI_SUCCESS .and. reqs(1) /= MPI_REQUEST_NULL, &
             'MPI_Request_get_status reports completion')
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. all([(xv(i) == minval([(mod(i * 5 + r * 3, 1013), &
             r = 0, p - 1)]), i = 1, n)]), 'MPI_Request_get_status, MPI_Wait: MPI_INTEGER min')

#ifdef USE_MPI_F08
  ! mpi_f08's MPI_Wait with a status and no ierror (optional there): MPI_INTEGER max.
  do i = 1, n
    xv(i) = mod(i * 7 + rank * 11, 1009)
  end do
  call MPI_Iallreduce(MPI_IN_PLACE, xv, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, reqs(1))
  call MPI_Wait(reqs(1), st)
  call MPI_Test_cancelled(st, flag)
  flag = .not. flag .and. reqs(1) == MPI_REQUEST_NULL
  call check(flag .and. all([(xv(i) == maxval([(mod(i * 7 + r * 11, 1009), r = 0, p - 1)]), &
             i = 1, n)]), 'mpi_f08 MPI_Wait with a status, no ierror: MPI_INTEGER max')
#endif

  ! Two MPI_Iallreduce outstanding, one MPI_Waitall.
  do i = 1, n
    iv(i) = mod(i, 1000) + 7 * rank
    rs(i) = real(mod(i, 100) + rank)
  end do
  call MPI_Iallreduce(MPI_IN_PLACE, iv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Iallreduce(rs, rv, 3, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. all([(iv(i) == p * mod(i, 1000) + 7 * p * (p - 1) / 2, &
             i = 1, n)]) .and. all([(rv(i) == real(p * mod(i, 100) + p * (p - 1) / 2), &
             i = 1, 3)]), 'two MPI_Iallreduce, one MPI_Waitall')

  ! A persistent allreduce (MPI 4.0): MPI_Allreduce_init, then three MPI_Start + MPI_Wait with
  ! new inputs, then MPI_Request_free: MPI_INTEGER sum. Under the preload `use mpi`'s MPI_Start
  ! (the C one) runs it through libcollx; mpi_f08's calls PMPI_Start itself, so MPI runs it.
  call MPI_Allreduce_init(iv, xv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &
                          preq, ierr)
  flag = ierr == MPI_SUCCESS
  do k = 1, 3
    do i = 1, n
      iv(i) = mod(i, 1000) + 7 * rank + k
    end do
    xv = -1
    call MPI_Start(preq, ierr)
    flag = flag .and. ierr == MPI_SUCCESS
    call MPI_Wait(preq, MPI_STATUS_IGNORE, ierr)
    flag = flag .and. ierr == MPI_SUCCESS .and. preq /= MPI_REQUEST_NULL .and. &
           all([(xv(i) == p * (mod(i, 1000) + k) + 7 * p * (p - 1) / 2, i = 1, n)])
  end do
  call MPI_Request_free(preq, ierr)
  call check(flag .and. ierr == MPI_SUCCESS .and. preq == MPI_REQUEST_NULL, &
             'persistent MPI_INTEGER sum: three starts')

  ! A persistent allreduce the preload passes to MPI (MPI_LOGICAL, MPI_LAND), three starts.
  ! Under the preload with COLLX_MPI_HOST_COPIES=1 (every buffer taken for device memory)
  ! `use mpi`'s runs on host copies made again at each start; mpi_f08's is refused
  ! (MPI_ERR_BUFFER): its MPI_Start, PMPI_Start itself, would not make them.
  call get_environment_variable('COLLX_MPI_HOST_COPIES', copies_env)
  call get_environment_variable('LD_PRELOAD', preload_env)
  refused = .false.
#ifdef USE_MPI_F08
  refused = copies_env == '1' .and. len_trim(preload_env) > 0
#endif
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Allreduce_init(lp, lp_all, 2, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, MPI_INFO_NULL, &
                          preq, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr2)
  if (refused) then
    cls = MPI_SUCCESS
    if (ierr /= MPI_SUCCESS) call MPI_Error_class(ierr, cls, ierr2)
    call check(cls == MPI_ERR_BUFFER .and. preq == MPI_REQUEST_NULL, &
               'persistent MPI_LOGICAL land on "device" buffers from mpi_f08: MPI_ERR_BUFFER')
  else
    flag = ierr == MPI_SUCCESS
    do k = 1, 3
      lp = [k == 2 .or. rank /= 0, .true.]
      lp_all = [k /= 2, .false.]
      call MPI_Start(preq, ierr)
      flag = flag .and. ierr == MPI_SUCCESS
      call MPI_Wait(preq, MPI_STATUS_IGNORE, ierr)
      flag = flag .and. ierr == MPI_SUCCESS .and. (lp_all(1) .eqv. (k == 2)) .and. lp_all(2)
    end do
    call MPI_Request_free(preq, ierr)
    call check(flag .and. ierr == MPI_SUCCESS .and. preq == MPI_REQUEST_NULL, &
               'persistent MPI_LOGICAL land (passed through): three starts')
  end if

  ! MPI_Comm_free with a request of MPI's own (MPI_LAND, passed through) still pending on it on
  ! the ranks but 0, where MPICH then defers the communicator's attribute callbacks: the
  ! preload frees its libcollx communicator in MPI_Comm_free itself (mpi_f08's calls
  ! PMPI_Comm_free, and is intercepted too), not later, when the others wait for rank 0 in
  ! the allreduce on MPI_COMM_WORLD.
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  iv(1) = rank
  call MPI_Allreduce(MPI_IN_PLACE, iv, 1, MPI_INTEGER, MPI_SUM, dup, ierr)
  l_in = .true.
  call MPI_Iallreduce(l_in, l_out, 1, MPI_LOGICAL, MPI_LAND, dup, reqs(2), ierr)
  if (rank == 0) call MPI_Wait(reqs(2), MPI_STATUS_IGNORE, ierr)
  call MPI_Comm_free(dup, ierr)
  flag = ierr == MPI_SUCCESS .and. dup == MPI_COMM_NULL .and. iv(1) == p * (p - 1) / 2
  iv(1) = 1
  call MPI_Allreduce(MPI_IN_PLACE, iv, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank /= 0) call MPI_Wait(reqs(2), MPI_STATUS_IGNORE, ierr)
  call check(flag .and. iv(1) == p .and. l_out, 'MPI_Comm_free with a request of MPI''s pending')

  ! MPI_LOGICAL and MPI_LAND: the interposer passes it through to MPI.
  flag = rank /= 1
  call MPI_Allreduce(flag, all_flag, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. (all_flag .eqv. p < 2), 'MPI_LOGICAL land')

  tally = [passed, failed]
  call MPI_Reduce(tally, total, 2, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(I0," passed, ",I0," failed")', total(1), total(2)
  call MPI_Bcast(total, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  if (total(2) /= 0) error stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (ok) then
      passed = passed + 1
    else
      failed = failed + 1
      print '("rank ",I0,": FAILED ",A)', rank, what
    end if
  end subroutine check

end program pmpi_fortran
