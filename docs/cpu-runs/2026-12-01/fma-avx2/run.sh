#!/usr/bin/env bash
# reduce_bench's 16-bit sum and prod at the AVX2 level (@avx2), 256 KiB, alternated ROUNDS (8)
# times: A = dab113d (the AVX2 sum as an add), B = 86815f6 (as a * 1 + b). Run from here.
A=${A:-/tmp/rb-before} B=${B:-/work/main/build/bench/reduce_bench}
for r in $(seq 1 ${ROUNDS:-8}); do
  for w in A B; do
    bin=${!w}
    $bin --benchmark_filter='^(bfloat16|float16)/(sum|prod)@avx2/262144' \
      --benchmark_min_time=0.2 > r$r-$w.txt 2>&1
  done
done
