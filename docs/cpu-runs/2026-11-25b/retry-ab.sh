#!/usr/bin/env bash
# A/B of the store choice's retry spacing: OLD (0082ab8, a retry every 32nd call) against NEW
# (the retries spaced by the cost ratio), alternated, ROUNDS rounds, each with MPICH's
# MPI_Allreduce in the same run. Usage: retry-ab.sh OLD_BUILD NEW_BUILD ROUNDS OUTDIR
set -u
old=$1 new=$2 rounds=$3 out=$4
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for v in old new; do
    b=$old; [ $v = new ] && b=$new
    "$b/bench/cpu_pair_probe" > "$out/$v.$i.txt" 2>&1
    mpiexec -n 2 "$b/bench/collx_osu" -m 16384:16777216 --compare-mpi -c >> "$out/$v.$i.txt" 2>&1
  done
done
