#!/usr/bin/env bash
# The test grace period (kTestGrace): collx_iallreduce + a loop of collx_test, 2 ranks,
# float32 sum, 4 B - 16 KiB, for grace periods of 20, 50, 100, 250 and 1000 us and one so long
# that the worker's alarm never rings in a run (1e9 us), alternated, 5 rounds. Built from
# 6124f52 with grace-env.patch (GRACE_US overrides kTestGrace) in /tmp/gracewt.
set -euo pipefail
for r in 1 2 3 4 5; do
  for g in 20 50 100 250 1000 1000000000; do
    echo "== grace $g $r"
    mpiexec -n 2 env GRACE_US=$g /tmp/gracewt/build/bench/collx_osu -m 4:16384 --nonblocking \
      --poll --compare-mpi -c -r 3 -i 200 -I 50
  done
done
