#!/bin/bash
# rep.sh SEED N RANKS: repeat one random program
for i in $(seq 1 $2); do
  s=$(date +%s.%N)
  COLLX_TIMEOUT=20 timeout 300 /work/main/test/run_preloaded.sh /tmp/rbuild/lib/pmpi/libcollx_mpi.so $3 /tmp/rbuild/test/pmpi_random $1 300 > r.$1.$i.log 2>&1
  rc=$?
  echo "$1 $i rc=$rc $(echo "$(date +%s.%N) - $s" | bc) $(tail -1 r.$1.$i.log)"
  [ $rc -eq 0 ] && rm r.$1.$i.log
done
