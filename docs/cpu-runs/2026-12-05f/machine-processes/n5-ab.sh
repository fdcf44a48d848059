#!/usr/bin/env bash
# The 5-rank program of RELIABILITY's stall (seed 3835, n5-uneven: pretended nodes of 3 and 2,
# COLLX_TIMEOUT=60) with the base and new builds in turn, BATCHES batches of 10 runs each,
# through 2026-12-05b's loop5.sh, which runs the build at /tmp/rbuild (a link set to each).
#   n5-ab.sh BASE NEW BATCHES > n5-ab.txt   (one line per run: batch, build, then loop5.sh's)
set -u
base=$1 new=$2 batches=$3
loop=$(cd "$(dirname "$0")/../../2026-12-05b/random/stall" && pwd)/loop5.sh
for b in $(seq "$batches"); do
  if [ $((b % 2)) -eq 1 ]; then name=base dir=$base; else name=new dir=$new; fi
  ln -sfn "$dir" /tmp/rbuild
  TO=60 "$loop" 10 3835 | sed "s/^/batch $b $name /"
done
