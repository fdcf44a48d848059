#!/bin/bash
# repd.sh SEED N RANKS TIMEOUT: repeat one random program (debug build /tmp/dbg), traced,
# under a CPU hog; when no rank traced a call for 4 s, dump every rank's threads with gdb
timeout 6000 bash -c "while :; do :; done" &
hog=$!
for i in $(seq 1 $2); do
  start=$(date +%s)
  PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=$4 timeout 300 /work/main/test/run_preloaded.sh /tmp/dbg/lib/pmpi/libcollx_mpi.so $3 /tmp/dbg/test/pmpi_random $1 300 > d.$1.$i.log 2>&1 &
  job=$!
  hung=0 last=0 same=0
  while kill -0 $job 2>/dev/null; do
    sleep 1
    size=$(grep -c "^trace" d.$1.$i.log)
    if [ "$size" = "$last" ]; then same=$((same + 1)); else same=0; last=$size; fi
    if [ $same -ge 4 ] && [ $hung -eq 0 ] && [ $size -gt 100 ] && [ $size -lt 1300 ]; then
      hung=1
      for pid in $(pgrep -x pmpi_random); do
        (gdb -p $pid -batch -ex "thread apply all bt" > d.$1.$i.gdb.$pid 2>&1) &
      done
      wait $(jobs -p | grep -v "^$job$" | grep -v "^$hog$") 2>/dev/null
    fi
  done
  wait $job
  rc=$?
  echo "$1 $i rc=$rc hung=$hung $(( $(date +%s) - start )) s slow=$(grep -c '^SLOW\|^  SLOW' d.$1.$i.log) $(tail -1 d.$1.$i.log)"
  [ $rc -eq 0 ] && [ $hung -eq 0 ] && [ $(grep -c "^SLOW" d.$1.$i.log) -eq 0 ] && rm d.$1.$i.log
done
kill $hog
