#!/bin/bash
# Runs `fault_test ring kill mid 4 0` N times under ASan + UBSan pinned to one CPU, as CI's
# matrix does but for the pinning; prints each run's table row and rank 3's message, then a
# tally (a scenario that fails is tried again, up to 3 tries: a run fails when all three do).
# Usage: run.sh FAULT_TEST N > OUT
ft=$1 n=$2 fails=0 tries_failed=0 relayed=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1
for i in $(seq 1 "$n"); do
  out=$(FAULT_VERBOSE=1 taskset -c 0 "$ft" ring kill mid 4 0 2>&1) || fails=$((fails + 1))
  echo "run $i"
  grep -E "^\| ring|FAIL|^    rank 3:" <<<"$out" | head -4
  tries_failed=$((tries_failed + $(grep -c "^  FAIL rank" <<<"$out")))
  grep -q "^    rank 3:.*as the sender saw" <<<"$out" && relayed=$((relayed + 1))
done
echo "$n runs, $fails failed, $tries_failed failed tries; rank 3 named rank 0 from rank 2's seal in $relayed"
