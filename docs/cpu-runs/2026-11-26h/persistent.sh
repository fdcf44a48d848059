#!/usr/bin/env bash
# The persistent allreduce under the preload against MPICH's own, 2 ranks, float32 sum:
# N runs (default 6) of collx_osu --persistent --compare-pmpi (MPI_Allreduce_init + MPI_Start
# + MPI_Wait through the preload, PMPI_Allreduce_init + PMPI_Start + PMPI_Wait: MPICH itself,
# interleaved on the same buffers; libcollx's collx_iallreduce + collx_wait beside them), the
# CPU pair probe before each. Outputs: OUT/runN.txt (probe line first); medians:
# tools/median-table OUT/run*.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=${OUT:-/tmp/persistent-runs}
mkdir -p "$out"
for i in $(seq 1 "${N:-6}"); do
  {
    build/bench/cpu_pair_probe
    mpiexec -n 2 env LD_PRELOAD="$PWD/build/lib/pmpi/libcollx_mpi.so" \
      build/bench/collx_osu -m 4:16777216 --compare-pmpi --persistent -c
  } > "$out/run$i.txt" 2>&1
done
