#!/usr/bin/env bash
# The preload's cost per call before and after this session's changes (MPI_Comm_free
# intercepted; the communicators' lifecycle moved to comms.cc, so a served call reaches
# collx_for in another file): /tmp/old_preload.so (98ed47a) and /tmp/new_preload.so (0848ffb),
# both built with -Dcuda=disabled, under the same build/bench/collx_osu, alternated, ROUNDS
# rounds, 4 B - 1 KiB, blocking then non-blocking; the CPU pair probe before each round (its
# round trip tells the VM's phase). Run from the repository root.
set -euo pipefail
for r in $(seq "${ROUNDS:-12}"); do
  echo "== probe $r"
  build/bench/cpu_pair_probe
  for v in old new; do
    echo "== blocking $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:1024 \
      --compare-pmpi -c -r 5
    echo "== nonblocking $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:1024 \
      --nonblocking --compare-pmpi -c -r 5
  done
done
