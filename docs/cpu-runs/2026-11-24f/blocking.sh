#!/usr/bin/env bash
# A/B of the blocking path at small sizes (the drain before each blocking call changed):
# daa6e4a (old) against 9907499 (new). Alternated, 3 rounds.
# Usage: blocking.sh OLD_BUILD NEW_BUILD OUTDIR
set -euo pipefail
old=$1 new=$2 out=$3
mkdir -p "$out"
for round in 1 2 3; do
  for v in old new; do
    b=$old; [ $v = new ] && b=$new
    mpiexec -n 2 "$b/bench/collx_osu" -m 4:65536 --compare-mpi -c -r 5 > "$out/$v.$round.txt" 2>&1
  done
done
