#!/bin/bash
# A/B of communicator create + one allreduce + destroy cycles (cycles.cc, from
# docs/cpu-runs/2026-11-26b/endpoints/), 0a3527a (old: a UCX collective confirms the creation)
# against 1ab4575 (new: two status rounds through the allgather, MPI_Allgather here, and no
# confirmation collective). Both libraries built release, -Dcuda=disabled (meson setup
# /tmp/oldb and /tmp/newb), and cycles.cc linked against each, from the repository's root:
#   mpicxx -O2 -std=c++17 -Iinclude docs/cpu-runs/2026-11-26b/endpoints/cycles.cc \
#     -o /tmp/cycles_$v -L/tmp/${v}b/lib -lcollx -Wl,-rpath,/tmp/${v}b/lib   (v = old, new)
# One node, 2 ranks, and two pretended nodes of one rank; alternated rounds.
#   ab.sh ROUNDS CYCLES
rounds=${1:-6} cycles=${2:-200}
for r in $(seq "$rounds"); do
  for v in old new; do
    echo "round $r $v 1 node: $(mpiexec -n 2 /tmp/cycles_$v "$cycles")"
    echo "round $r $v 2 nodes: $(mpiexec -n 1 -env COLLX_NODE node-a /tmp/cycles_$v "$cycles" : \
          -n 1 -env COLLX_NODE node-b /tmp/cycles_$v "$cycles")"
  done
done
