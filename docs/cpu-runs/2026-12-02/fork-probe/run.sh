#!/usr/bin/env bash
# By hand: rank 0's forked child calls MPI_Allreduce on MPI_COMM_WORLD while both parents run
# 10 allreduces with new values ("bad": sums that are wrong); MPICH alone, then under the preload.
set -u
mpicc fork_probe.c -o /tmp/fork_probe
for i in 1 2 3; do
  echo "== MPICH alone, run $i"
  timeout 60 mpiexec -n 2 /tmp/fork_probe 2>&1 | grep -v '^$'
  echo "== preloaded (build/ of the commit that adds the check), run $i"
  timeout 60 mpiexec -n 2 -env LD_PRELOAD "$(pwd)/../../../../build/lib/pmpi/libcollx_mpi.so" \
    /tmp/fork_probe 2>&1 | grep -v '^$'
done
