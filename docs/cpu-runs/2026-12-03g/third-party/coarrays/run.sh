#!/usr/bin/env bash
# OpenCoarrays 2.10.1's own test programs (Debian 12's libcoarrays-mpich-dev, the MPICH build),
# unmodified, without and with libcollx's preload: run.sh PRELOAD_LIB RANKS PROGRAM...
# One line per run: program, setting, exit status, its "Test passed" line (if any) and, preloaded,
# libcollx's statistics of MPI_Allreduce calls.
lib=$1 n=$2; shift 2
T=/usr/lib/x86_64-linux-gnu/open-coarrays/mpich/bin/OpenCoarrays-2.10.1-tests
for p in "$@"; do
  for setting in plain preload; do
    pre=()
    [ $setting = preload ] && pre=(env LD_PRELOAD="$lib" COLLX_MPI_VERBOSE=1)
    timeout 120 mpiexec -n "$n" "${pre[@]}" "$T/$p" > "$p.n$n.$setting.txt" 2>&1
    rc=$?
    pass=$(grep -a -i -m1 "test passed" "$p.n$n.$setting.txt")
    stats=$(grep -a "libcollx_mpi:" "$p.n$n.$setting.txt" | sed 's/libcollx_mpi: *//' | tr '\n' ';')
    echo "$p n=$n $setting rc=$rc | ${pass:-(no pass line)} | $stats"
  done
done
