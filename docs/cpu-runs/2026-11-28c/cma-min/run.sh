#!/usr/bin/env bash
# The point-to-point algorithms within a node (forced), their copies by cross-memory attach
# from 16K (the default COLLX_CMA_MIN) or all through UCX (COLLX_CMA_MIN=1G), with inputs
# rewritten before each call (--rewrite) and without; R rounds (default 2), the order
# alternated by round: A.CMA.rw.R.txt / A.CMA.plain.R.txt here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "${REPO:-/work/main}"
for r in $(seq 1 "${R:-2}"); do
  cmas=(16K 1G); [ $((r % 2)) = 0 ] && cmas=(1G 16K)
  for a in ring rabenseifner; do
    for c in "${cmas[@]}"; do
      for mode in rw plain; do
        extra=(); [ $mode = rw ] && extra=(--rewrite)
        mpiexec -n 2 -genv COLLX_CMA_MIN "$c" build/bench/collx_osu -m 16384:16777216 \
          --compare-mpi -c --algo "$a" "${extra[@]}" > "$here/$a.$c.$mode.$r.txt" 2>&1
      done
    done
  done
done
