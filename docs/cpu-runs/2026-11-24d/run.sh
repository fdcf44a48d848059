#!/bin/bash
cd /work/main
for round in 1 2 3; do
  ./build/bench/cpu_pair_probe > /tmp/ab/probe.$round.txt
  for b in base new; do
    if [ $b = base ]; then bin=/tmp/base/build/bench/collx_osu; else bin=/work/main/build/bench/collx_osu; fi
    for a in shm_cma ring rabenseifner recursive_doubling; do
      for off in 0 4080; do
        echo "== $b $a offset $off round $round"
        mpiexec -n 2 $bin -m 16384:4194304 --algo $a --offset $off -r 3 2>&1
      done
    done
  done > /tmp/ab/out.$round.txt
done
echo done > /tmp/ab/finished
