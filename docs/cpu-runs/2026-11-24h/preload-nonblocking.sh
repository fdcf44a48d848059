#!/usr/bin/env bash
# MPI_Iallreduce + MPI_Wait under LD_PRELOAD=libcollx_mpi.so ("MPI" column) against
# PMPI_Iallreduce + PMPI_Wait (MPICH itself, "PMPI" column) and collx_iallreduce + collx_wait
# (the library called directly, "Avg Latency"), interleaved in one run; 3 runs, busy
# computation, then a batch of 8 (MPI_Waitall). Run from the repository root after a build.
set -euo pipefail
out=docs/cpu-runs/2026-11-24h
lib=$PWD/build/lib/pmpi/libcollx_mpi.so
for run in 1 2 3; do
  mpiexec -n 2 env LD_PRELOAD="$lib" build/bench/collx_osu -m 4:4194304 --nonblocking \
    --compare-pmpi -c -r 3 > "$out/single-$run.txt"
  mpiexec -n 2 env LD_PRELOAD="$lib" build/bench/collx_osu -m 4:1048576 --nonblocking \
    --batch 8 --compare-pmpi -c -r 3 > "$out/batch8-$run.txt"
done
