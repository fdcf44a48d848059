#!/usr/bin/env bash
# The main job's sweep with --rewrite (every rank writes its input again before each call),
# the defaults and each algorithm that can run on 2 ranks of one node, R rounds (default 3),
# the order rotated by round: A.R.txt here, each after the CPU pair probe.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "${REPO:-/work/main}"
algos=(default recursive_doubling shm_two_shot shm_cma shm_one_shot)
for r in $(seq 1 "${R:-3}"); do
  for i in "${!algos[@]}"; do
    a=${algos[$(( (i + r - 1) % ${#algos[@]} ))]}
    extra=()
    [ "$a" = default ] || extra=(--algo "$a")
    { build/bench/cpu_pair_probe
      mpiexec -n 2 build/bench/collx_osu -m 1024:16777216 --compare-mpi -c --rewrite "${extra[@]}"
    } > "$here/$a.$r.txt" 2>&1
  done
done
