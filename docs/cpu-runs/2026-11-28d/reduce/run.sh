#!/usr/bin/env bash
# 684f951's reduce_bench (built in /tmp/old-rb: meson setup with -Dbenchmarks=enabled
# -Dcuda=disabled -Dtests=disabled on a worktree of 684f951) and this build's, alternated three
# times; then summarize.py > summary.md. reduce_bench.1.txt (684f951) and .2.txt (72477e7) are
# single wider runs of the same day.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd /work/main
for k in 1 2 3; do
  /tmp/old-rb/bench/reduce_bench --benchmark_filter='16/' --benchmark_min_time=0.3 > "$here/old-684f951.$k.txt" 2>&1
  build/bench/reduce_bench --benchmark_filter='^b?float16/[a-z]+/' --benchmark_min_time=0.3 > "$here/new-72477e7.$k.txt" 2>&1
done
python3 "$here/summarize.py" > "$here/summary.md"
