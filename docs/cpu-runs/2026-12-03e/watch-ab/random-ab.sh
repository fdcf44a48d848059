#!/usr/bin/env bash
# A/B of the random preload programs (tools/run-random-programs, default set: 2 - 4 ranks on
# this VM's 2 CPUs; since 2026-12-05 SET may name another) between build folders BASE and NEW,
# seed by seed, the order alternating; each seed's runs go to random.NAME.txt, and its wall
# time is printed.
#   random-ab.sh BASE NEW FIRST LAST STEPS [SET]
set -u
base=$1 new=$2 first=$3 last=$4 steps=$5 set=${6:-one-node}
tools=$(cd "$(dirname "$0")/../../../../tools" && pwd)
for seed in $(seq "$first" "$last"); do
  if [ $((seed % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for name in $order; do
    dir=$base; [ "$name" = new ] && dir=$new
    start=$(date +%s.%N)
    "$tools/run-random-programs" "$dir" "$seed" "$seed" "$steps" "$set" >> "random.$name.txt"
    end=$(date +%s.%N)
    printf 'seed %d %s %.1f s, %s runs failed\n' "$seed" "$name" "$(echo "$end - $start" | bc)" \
      "$(grep -c -v ' rc=0 ' <(grep "seed $seed " "random.$name.txt"))"
  done
done
