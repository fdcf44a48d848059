#!/usr/bin/env bash
# A/B of mpi_f08's MPI_Wait under the preload: the base preload (8bc10d5, which leaves it to
# MPICH's wait, which polls), the new one (which intercepts mpi_wait_f08_) and plain MPICH,
# alternated, 3 rounds, with the probe ../2026-11-24i/poll-probe-f08.F90 built for mpi_f08
# (/tmp/probe-f08) and for `use mpi` (/tmp/probe-f77). 2 ranks; each run prints 5 repetitions
# of 20000 MPI_Iallreduce + MPI_Wait of one integer, µs per operation.
base=${BASE:-/tmp/base/b/lib/pmpi/libcollx_mpi.so}
new=${NEW:-/work/main/build/lib/pmpi/libcollx_mpi.so}
for round in 1 2 3; do
  for probe in f08 f77; do
    for v in base new plain; do
      case $v in
        base) pre=$base ;;
        new) pre=$new ;;
        plain) pre= ;;
      esac
      echo "== round $round probe $probe preload $v"
      mpiexec -n 2 env ${pre:+LD_PRELOAD=$pre} /tmp/probe-$probe
    done
  done
done
