#!/bin/bash
# A/B of small messages: base (/tmp/base) against new (/work/main), alternated.
cd /work/main
out=$1; pairs=${2:-5}
mkdir -p $out
/work/main/build/bench/cpu_pair_probe > $out/probe.txt
for r in $(seq 1 $pairs); do
  for b in base new; do
    if [ $b = base ]; then bin=/tmp/base/build/bench/collx_osu; else bin=/work/main/build/bench/collx_osu; fi
    mpiexec -n 2 $bin -m 4:16384 --compare-mpi > $out/$b.$r.txt 2>&1
  done
done
/work/main/build/bench/cpu_pair_probe >> $out/probe.txt
