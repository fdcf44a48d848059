#!/usr/bin/env bash
# Completion by polling (MPI_Test in a loop) under the preload, before and after collx_test
# yields the core when the operation is not complete: /tmp/new_preload.so (36ce8b1, no
# yield) and /tmp/yield_preload.so (the commit after it), alternated, 3 rounds, 2 ranks,
# float32 sum, 4 B - 1 MiB; MPICH's own (PMPI_Iallreduce + PMPI_Test) in the same runs.
set -euo pipefail
for r in 1 2 3; do
  for v in new yield; do
    echo "== $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:1048576 \
      --nonblocking --poll --compare-pmpi -c -r 3 -i 200 -I 50
  done
done
