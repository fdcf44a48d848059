#!/usr/bin/env bash
# A/B of the meson tests with more ranks than this VM's 2 CPUs: BASE and NEW build folders
# (meson, release), ROUNDS rounds, the order alternating; each run's meson test log is kept as
# testlog.ROUND.NAME.json and its wall time printed. PATTERN (an extended regex) picks other
# tests by name.
#   meson-ab.sh BASE NEW ROUNDS OUTDIR [PATTERN]
set -u
base=$1 new=$2 rounds=$3 out=$4 pattern=${5:-"_n[3-9]|_2x|_2_1_1|random"}
tests=$(meson test -C "$new" --list 2>/dev/null | grep -E "$pattern" | grep -v cuda_)
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for name in $order; do
    dir=$base; [ "$name" = new ] && dir=$new
    start=$(date +%s.%N)
    meson test -C "$dir" --no-rebuild $tests > "$out/meson.$r.$name.txt" 2>&1
    rc=$?
    end=$(date +%s.%N)
    cp "$dir/meson-logs/testlog.json" "$out/testlog.$r.$name.json"
    printf 'round %d %s rc=%d %.1f s: %s\n' "$r" "$name" "$rc" "$(echo "$end - $start" | bc)" \
      "$(grep -a -E '^Ok:|^Fail:' "$out/meson.$r.$name.txt" | tr '\n' ' ')"
  done
done
