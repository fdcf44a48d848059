#!/bin/bash
# A/B of communicator create + one allreduce + destroy cycles on pretended nodes, before
# (8ed9950: endpoints closed at their last communicator's destroy) and after (b4f34fb: kept
# until collx_finalize). Both libraries built -Dcuda=disabled, release; the same program
# (cycles.cc) linked against each. Alternated rounds.
#   ab.sh ROUNDS CYCLES
rounds=${1:-3} cycles=${2:-20}
for r in $(seq "$rounds"); do
  for v in old new; do
    for layout in "2+1" "2x2"; do
      if [ "$layout" = "2+1" ]; then
        out=$(mpiexec -n 2 -env COLLX_NODE node-a /tmp/soak/cycles_$v "$cycles" : \
              -n 1 -env COLLX_NODE node-b /tmp/soak/cycles_$v "$cycles")
      else
        out=$(mpiexec -n 1 -env COLLX_NODE node-a /tmp/soak/cycles_$v "$cycles" : \
              -n 1 -env COLLX_NODE node-b /tmp/soak/cycles_$v "$cycles" : \
              -n 1 -env COLLX_NODE node-a /tmp/soak/cycles_$v "$cycles" : \
              -n 1 -env COLLX_NODE node-b /tmp/soak/cycles_$v "$cycles")
      fi
      echo "round $r $v $layout: $out"
    done
  done
done
