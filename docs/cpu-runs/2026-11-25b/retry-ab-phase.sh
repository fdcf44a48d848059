#!/usr/bin/env bash
# As retry-ab-collx.sh, and after each pair the phase: NEW's 1 MiB with streaming and with
# ordinary stores forced (COLLX_SHM_STORES), which says how much a retry of the slower kind
# costs in that round. Usage: OLD NEW ROUNDS OUT
set -u
old=$1 new=$2 rounds=$3 out=$4
for i in $(seq 1 "$rounds"); do
  for v in old new; do
    b=$old; [ $v = new ] && b=$new
    echo "== round $i $v"
    mpiexec -n 2 "$b/bench/collx_osu" -m 262144:4194304 -r 5 | grep -E '^ *[0-9]+ '
  done
  for s in streaming cached; do
    echo "== round $i forced-$s"
    mpiexec -n 2 env COLLX_SHM_STORES=$s "$new/bench/collx_osu" -m 1048576:1048576 -r 3 | grep -E '^ *[0-9]+ '
  done
done > "$out" 2>&1
