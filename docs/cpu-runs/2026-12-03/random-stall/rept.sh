#!/bin/bash
# rept.SEED N RANKS: repeat one random program, traced, under a CPU hog, until it fails
timeout 900 bash -c "while :; do :; done" &
hog=$!
for i in $(seq 1 $2); do
  PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=20 timeout 300 /work/main/test/run_preloaded.sh /tmp/rbuild/lib/pmpi/libcollx_mpi.so $3 /tmp/rbuild/test/pmpi_random $1 300 > t.$1.$i.log 2>&1
  rc=$?
  echo "$1 $i rc=$rc $(tail -1 t.$1.$i.log)"
  [ $rc -eq 0 ] && rm t.$1.$i.log
  [ $rc -ne 0 ] && break
done
kill $hog
