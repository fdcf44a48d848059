#!/usr/bin/env bash
# A/B of the non-blocking path: daa6e4a (old: every operation handed to the worker, the waiter
# spins) against 9907499 (new), both running 9907499's collx_osu. Alternated, 3 rounds;
# busy computation (OSU's), then sleeping computation.
# Usage: nonblocking.sh OLD_BUILD NEW_BUILD OUTDIR
set -euo pipefail
old=$1 new=$2 out=$3
mkdir -p "$out"
for round in 1 2 3; do
  for v in old new; do
    b=$old; [ $v = new ] && b=$new
    for c in busy sleep; do
      mpiexec -n 2 "$b/bench/collx_osu" -m 4:4194304 --compare-mpi --nonblocking \
        --compute $c -c -r 3 > "$out/$v.$c.$round.txt" 2>&1
    done
  done
done
