#!/usr/bin/env bash
# The 4-rank sweep of docs/PERFORMANCE.md ("4 ranks on 2 cores"), three runs: four.K.txt and
# wall.K.txt here, then sum.py > summary.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd /work/main
for k in 1 2 3; do
  start=$(date +%s.%N)
  mpiexec -n 4 build/bench/collx_osu -m 4:1048576 --compare-mpi -c -i 100 -x 10 -I 20 -X 2 -r 1 \
    > "$here/four.$k.txt" 2>&1
  echo "wall $(echo "$(date +%s.%N) - $start" | bc | xargs printf '%.2f') s" > "$here/wall.$k.txt"
done
python3 "$here/sum.py" > "$here/summary.md"
