#!/bin/bash
# ab2.sh N SEED RANKS: the random program on one node of RANKS ranks beside a busy loop in a
# session of its own, alternating A (/tmp/abA/b, HEAD) and B (/work/main/build, the change);
# per run: wall time and the longest time between two trace lines of one rank (gap)
cd /tmp/ab
setsid bash -c 'while :; do :; done' & hog=$!
for i in $(seq 1 $1); do
  for v in A B; do
    if [ $v = A ]; then b=/tmp/abA/b; else b=/work/main/build; fi
    t0=$(date +%s.%N)
    env PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=60 timeout 300 /work/main/test/run_preloaded.sh \
      $b/lib/pmpi/libcollx_mpi.so $3 $b/test/pmpi_random $2 300 > r2.$v.log 2>&1
    rc=$?
    gap=$(awk '/^trace/ {r = $4; t = $2; if (r in last && t - last[r] > m) m = t - last[r]
                         last[r] = t}
               END {printf "%.2f", m}' r2.$v.log)
    echo "$v $i rc=$rc $(echo "$(date +%s.%N) - $t0" | bc) gap=$gap"
  done
done
kill $hog
