#!/usr/bin/env bash
# send_guarded A/B: 8a7a044 (after) against 13b993d (before), the same collx_osu, each library
# by LD_LIBRARY_PATH. Two pretended nodes, 8 rounds; one node, forced recursive_doubling, 6.
set -euo pipefail
osu=/work/main/build/bench/collx_osu
lib_before=/tmp/wb/build/lib lib_after=/tmp/wa/build/lib
two() {  # $1 = lib dir, $2 = output
  mpiexec -n 1 -env COLLX_NODE node-a -env LD_LIBRARY_PATH "$1" $osu -m 4:1048576 : \
    -n 1 -env COLLX_NODE node-b -env LD_LIBRARY_PATH "$1" $osu -m 4:1048576 > "$2"
}
one() {
  mpiexec -n 2 -env LD_LIBRARY_PATH "$1" $osu -m 4:1048576 --algo recursive_doubling > "$2"
}
mkdir -p two-nodes one-node
for r in $(seq 9 32); do
  if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for w in $order; do
    eval lib=\$lib_$w
    two "$lib" two-nodes/r$r-$w.txt
    [ $r -le 0 ] && one "$lib" one-node/r$r-$w.txt
  done
  echo "round $r done"
done
