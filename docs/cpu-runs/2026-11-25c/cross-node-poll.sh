#!/usr/bin/env bash
# Two ranks that pretend to live on two nodes (COLLX_NODE a / b: no shared segment between
# them; libcollx's endpoints between "nodes" use UCX's peer error mode, hence TCP here), MPICH
# beside them (which sees one node and uses its shared memory). Blocking, then iallreduce +
# wait, then iallreduce + a collx_test loop (the operation handed to the worker), two rounds.
set -euo pipefail
osu=(build/bench/collx_osu -m 4:65536 --compare-mpi -c -r 3 -i 200 -I 50)
for round in 1 2; do
  for mode in "" "--nonblocking" "--nonblocking --poll"; do
    echo "== round $round: ${mode:-blocking}"
    mpiexec -n 1 -env COLLX_NODE a "${osu[@]}" $mode : -n 1 -env COLLX_NODE b "${osu[@]}" $mode |
      grep -E "^[0-9]"
  done
done
