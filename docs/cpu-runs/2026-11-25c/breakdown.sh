#!/usr/bin/env bash
# Where a 1 MiB two-shot call's time goes, 2 ranks: a build of HEAD with breakdown.patch
# (rdtsc around each step of allreduce_shm_two_shot, printed per rank at exit as ticks per
# call, 2.6 GHz TSC; EXP_FLUSH=1 also has the reader clflushopt the peer's lines after it read
# them; EXP_PUT picks other copy loops for the result, 0 = the library's), three rounds of:
# the probe line, then cached stores, streaming stores, cached stores + EXP_FLUSH.
# Also rewrite-probe.cc (g++ -O2 -pthread): the probe's handover with the reader flushing
# (mode 1), reading with prefetchnta (2), or the writer streaming (3). Usage:
#   git worktree add /tmp/exp HEAD && (cd /tmp/exp && git apply .../breakdown.patch &&
#   meson setup build --buildtype=release -Dcuda=disabled && ninja -C build bench/collx_osu)
#   EXP=/tmp/exp docs/cpu-runs/2026-11-25c/breakdown.sh
set -euo pipefail
exp=${EXP:-/tmp/exp}
osu=(build/bench/collx_osu -m 1048576:1048576 -c -i 2000 -x 200 -I 2000 -X 200 -r 1)
for round in 1 2 3; do
  echo "== round $round"
  build/bench/cpu_pair_probe
  for v in "cached" "streaming" "cached EXP_FLUSH"; do
    set -- $v
    echo "-- COLLX_SHM_STORES=$1 ${2:-}"
    (cd "$exp" && mpiexec -n 2 -genv COLLX_SHM_STORES "$1" ${2:+-genv $2 1} "${osu[@]}" 2>&1 |
      grep -E "^1048576|breakdown")
  done
  for m in 0 1 2 3; do /tmp/ho/ho 128 $m; done
done
