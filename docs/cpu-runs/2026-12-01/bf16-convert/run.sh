#!/usr/bin/env bash
# reduce_bench's bfloat16 kernels (AVX-512 level), A = fcf4eab (integer rounding), B = 7f74192
# (AVX-512 BF16's vcvtne2ps2bf16), alternated three times. Run from this folder.
A=${A:-/tmp/base/build/bench/reduce_bench} B=${B:-/work/main/build/bench/reduce_bench}
for r in 1 2 3; do
  for w in A B; do
    bin=$A; [ $w = B ] && bin=$B
    $bin --benchmark_filter='^(bfloat16/(sum|prod|min|max|avg)|float16/(sum|max)|memcpy)/' \
      --benchmark_min_time=0.3 > r$r-$w.txt 2>&1
  done
done
