#!/usr/bin/env bash
# The probe's line (with the handover rates), then 1 MiB with each kind of store forced and
# MPI_Allreduce beside it, three rounds. Run from the repository root after a release build.
set -euo pipefail
for round in 1 2 3; do
  echo "== round $round"
  build/bench/cpu_pair_probe
  for stores in streaming cached auto; do
    echo "-- COLLX_SHM_STORES=$stores"
    mpiexec -n 2 -genv COLLX_SHM_STORES $stores build/bench/collx_osu -m 1048576:1048576 \
      --compare-mpi -c | grep -E "^1048576 "
  done
done
