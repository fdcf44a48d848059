#!/usr/bin/env bash
# Tests that run the operation once every rank has started it (6124f52, "new") against the
# commit before (63b15a1, "base": a test hands it to libcollx's thread), alternated, 7
# rounds, 2 ranks, float32 sum, 4 B - 1 MiB. Three modes per round:
#   direct:  collx_iallreduce + a loop of collx_test, MPICH's MPI_Iallreduce + MPI_Test (--compare-mpi)
#   preload: MPI_Iallreduce + a loop of MPI_Test through each preload, MPICH's own (PMPI_*)
#   wait:    MPI_Iallreduce + MPI_Wait through each preload (unchanged path, for regressions)
# base: /tmp/basewt (a worktree at 63b15a1, built release), its preload in /tmp/base_preload.so;
# new: build/ and /tmp/new_preload.so.
set -euo pipefail
for r in 1 2 3 4 5 6 7; do
  for v in base new; do
    osu=build/bench/collx_osu
    [ $v = base ] && osu=/tmp/basewt/build/bench/collx_osu
    echo "== direct $v $r"
    mpiexec -n 2 $osu -m 4:1048576 --nonblocking --poll --compare-mpi -c -r 3 -i 200 -I 50
    echo "== preload $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:1048576 \
      --nonblocking --poll --compare-pmpi -c -r 3 -i 200 -I 50
    echo "== wait $v $r"
    mpiexec -n 2 env LD_PRELOAD=/tmp/${v}_preload.so build/bench/collx_osu -m 4:1048576 \
      --nonblocking --compare-pmpi -c -r 3 -i 200 -I 50
  done
done
