#!/usr/bin/env bash
# reduce_bench's 16-bit kernels at the AVX-512 level (and memcpy) at 256 KiB (in cache; from
# memory, runs scattered too widely to compare), three builds alternated ROUNDS (12) times:
# A = fcf4eab (bfloat16 rounded with integers), B = 7f74192 (AVX-512 BF16's vcvtne2ps2bf16),
# C = cf2f7f9 (also the sum as a * 1 + b). Run from this folder.
A=${A:-/tmp/base/build/bench/reduce_bench} B=${B:-/tmp/mid/build/bench/reduce_bench}
C=${C:-/work/main/build/bench/reduce_bench}
for r in $(seq 1 ${ROUNDS:-12}); do
  for w in A B C; do
    bin=${!w}
    $bin --benchmark_filter='^(bfloat16|float16)/(sum|prod|min|max)/262144|^memcpy/262144' \
      --benchmark_min_time=0.2 > r$r-$w.txt 2>&1
  done
done
