#!/usr/bin/env bash
# The cost of setting the outer-progress hook around each served MPI_Allreduce: the preload
# built with it (/tmp/with_hook.so, commit 25b129c) and without it (the same source less the
# `const MpiProgress progress;` line in MPI_Allreduce), alternated, 4 B - 1 KiB.
set -euo pipefail
for r in 1 2 3 4; do
  for v in with without; do
    echo "== $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_hook.so build/bench/collx_osu -m 4:1024 \
      --compare-pmpi -c -r 5
  done
done
