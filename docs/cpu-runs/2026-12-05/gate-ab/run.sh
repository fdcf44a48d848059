#!/usr/bin/env bash
# run.sh OLD NEW ROUNDS OUTDIR: the preload's small-message latency (collx_osu --compare-pmpi,
# 4 B - 1 KiB, 2 ranks) under OLD and NEW libcollx_mpi.so, alternating, ROUNDS runs each.
set -eu
old=$1 new=$2 rounds=$3 out=$4
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for which in old new; do
    lib=$old; [ $which = new ] && lib=$new
    [ $((i % 2)) = 0 ] && { [ $which = old ] && lib=$new || lib=$old; }
    name=$([ "$lib" = "$new" ] && echo new || echo old)
    mpiexec -n 2 env LD_PRELOAD="$lib" build/bench/collx_osu -m 4:1024 --compare-pmpi -c \
      > "$out/$name-$i.txt" 2>&1
  done
done
