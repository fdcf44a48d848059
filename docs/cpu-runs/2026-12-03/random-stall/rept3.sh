#!/bin/bash
# rept2.sh SEED N RANKS: repeat one random program, traced with times, under a CPU hog; keep
# the logs of runs that fail or take over 15 s
timeout 3000 bash -c "while :; do :; done" &
hog=$!
for i in $(seq 1 $2); do
  start=$(date +%s)
  PMPI_RANDOM_TRACE=1 OOBDEBUG=1 COLLX_TIMEOUT=20 timeout 300 /work/main/test/run_preloaded.sh /tmp/dbg/libcollx_mpi.so $3 /tmp/dbg/pmpi_random $1 300 > d.$1.$i.log 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  echo "$1 $i rc=$rc $took s $(tail -1 d.$1.$i.log)"
  [ $rc -eq 0 ] && [ $took -le 15 ] && rm d.$1.$i.log
done
kill $hog
