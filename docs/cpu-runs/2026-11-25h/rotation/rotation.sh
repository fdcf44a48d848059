#!/usr/bin/env bash
# Experiment (not in the library): the two-shot's slots and result areas used in rotation over
# EXP_GEN generations instead of two, so that a line is rewritten only after the peer has read
# EXP_GEN/2 times as much else. Build: a worktree of the commit named in the README with
# rotation.patch applied, built release in its build/. Each round runs every EXP_GEN value
# once, in rotating order, with MPI_Allreduce timed in the same run.
# Usage: rotation.sh BUILD_DIR ROUNDS GEN...
set -euo pipefail
build=$1 rounds=$2
shift 2
gens=("$@")
for ((i = 1; i <= rounds; ++i)); do
  n=${#gens[@]}
  for ((j = 0; j < n; ++j)); do
    g=${gens[$(((i + j) % n))]}
    echo "=== round $i EXP_GEN=$g"
    "$build"/bench/cpu_pair_probe
    EXP_GEN=$g mpiexec -n 2 -genv EXP_GEN "$g" "$build"/bench/collx_osu -m 262144:4194304 --compare-mpi -c 2>&1 |
      grep -E '^ *[0-9]+ ' || true
  done
done
