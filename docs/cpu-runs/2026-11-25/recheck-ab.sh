#!/usr/bin/env bash
# collx_test returns the result from the call whose nudge ran the operation (the commit after
# cb773f5, "after") against cb773f5 ("before": that call returned COLLX_IN_PROGRESS after a
# sched_yield, and the next one returned the result). Alternated, 5 rounds, 2 ranks, float32
# sum, 4 B - 16 KiB; direct (collx_test loop beside MPICH's MPI_Test loop) and preloaded
# (MPI_Test loop beside MPICH's own). before: /tmp/basewt (a worktree at cb773f5) and
# /tmp/before_preload.so; after: build/ and /tmp/after_preload.so.
set -euo pipefail
for r in 1 2 3 4 5; do
  for v in before after; do
    osu=build/bench/collx_osu
    [ $v = before ] && osu=/tmp/basewt/build/bench/collx_osu
    echo "== direct $v $r"
    mpiexec -n 2 $osu -m 4:16384 --nonblocking --poll --compare-mpi -c -r 3 -i 200 -I 50
    echo "== preload $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:16384 \
      --nonblocking --poll --compare-pmpi -c -r 3 -i 200 -I 50
  done
done
