#!/usr/bin/env bash
# A/B of announcements across nodes: two ranks that pretend to live on two nodes (COLLX_NODE
# a / b: no shared segment; TCP stands in for the network), iallreduce + collx_wait and
# iallreduce + a collx_test loop, 4 B - 64 KiB. "base" is the build in /tmp/base (commit 6a69a28,
# before announcements; for ../2026-11-25f/progress-unsent-ab-10.txt commit 70445f7, before
# fb224bd), "new" this working tree's build; alternated, ROUNDS rounds (default 3).
# MPICH's column sees one node (shared memory): no comparison here.
set -euo pipefail
cd "$(dirname "$0")/../../.."
run() {  # build mode...
  local b=$1; shift
  local osu=("$b/bench/collx_osu" -m 4:65536 --compare-mpi -c -r 3 -i 200 -I 50 "$@")
  mpiexec -n 1 -env COLLX_NODE a "${osu[@]}" : -n 1 -env COLLX_NODE b "${osu[@]}" |
    grep -E "^[0-9]"
}
for round in $(seq 1 ${ROUNDS:-3}); do
  for mode in "--nonblocking" "--nonblocking --poll"; do
    for b in base new; do
      dir=build; [ $b = base ] && dir=/tmp/base/build
      echo "== round $round: $b $mode"
      run $dir $mode
    done
  done
done
