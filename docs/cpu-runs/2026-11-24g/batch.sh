#!/bin/sh
# A/B: a009255's library (old) against this commit's (new), alternated, with this commit's
# collx_osu; batches of 8 non-blocking operations, 2 ranks, busy computation.
# Usage: batch.sh OLD_LIBDIR NEW_LIBDIR OSU ROUNDS
old=$1 new=$2 osu=$3 rounds=${4:-3}
for r in $(seq 1 "$rounds"); do
  for v in old new; do
    eval lib=\$$v
    echo "== $v round $r"
    mpiexec -n 2 env LD_LIBRARY_PATH="$lib" "$osu" -m 4:1048576 --compare-mpi --nonblocking \
      --batch 8 -c -r 3
  done
done
