#!/usr/bin/env bash
# reduce_bench's 16-bit min and max at both vector levels, 256 KiB (in cache), alternated
# ROUNDS (12) times: A = 7f74192 (min and max by two compares and a blend; the same code as
# fa41412's), B = b03b0cb (vminps/vmaxps and a NaN fix-up). Run from here.
A=${A:-/tmp/mid/build/bench/reduce_bench} B=${B:-/work/main/build/bench/reduce_bench}
for r in $(seq 1 ${ROUNDS:-12}); do
  for w in A B; do
    bin=${!w}
    $bin --benchmark_filter='^(bfloat16|float16)/(min|max)(@avx2)?/262144' \
      --benchmark_min_time=0.2 > r$r-$w.txt 2>&1
  done
done
