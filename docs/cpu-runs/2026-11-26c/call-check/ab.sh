#!/usr/bin/env bash
# A/B of the shared-memory call check: before (5026c0d) and after (B: the commit checked out in /tmp/abB), release builds with
# -Dcuda=disabled in two worktrees (A=/tmp/abA, B=/tmp/abB), alternated, 2 ranks, float32 sum,
# the default selection (shm_one_shot to 16K, shm_two_shot above), MPICH in the same run.
set -u
rounds=${ROUNDS:-5}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for side in $order; do
    for m in 4:64 56:56 8192:8192 1048576:1048576; do
      echo "== round $r side $side sizes $m"
      mpiexec -n 2 /tmp/ab$side/build/bench/collx_osu -m $m -i 20000 -x 2000 -I 200 -X 20 \
        --compare-mpi
    done
  done
done
