#!/usr/bin/env bash
# The preload's cost per call before and after this session's changes (type table by kind and
# size, _c entry points, start at the first call, finish in MPI_COMM_SELF's delete callback):
# /tmp/old_preload.so (ff87d97) and /tmp/new_preload.so (36ce8b1), the same collx_osu,
# alternated, ROUNDS rounds (12 for preload-ab.txt), 4 B - 1 KiB, blocking then non-blocking.
set -euo pipefail
for r in $(seq "${ROUNDS:-12}"); do
  for v in old new; do
    echo "== blocking $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:1024 \
      --compare-pmpi -c -r 5
    echo "== nonblocking $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:1024 \
      --nonblocking --compare-pmpi -c -r 5
  done
done
