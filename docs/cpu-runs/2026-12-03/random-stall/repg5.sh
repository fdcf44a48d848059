#!/bin/bash
# repg.sh SEED N RANKS TIMEOUT: repeat one random program, traced, under a CPU hog; when its
# trace has not grown for 5 s before its end, dump every rank's threads with gdb (at once)
timeout 3000 bash -c "while :; do :; done" &
hog=$!
for i in $(seq 1 $2); do
  start=$(date +%s)
  PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=$4 timeout 300 /work/main/test/run_preloaded.sh /tmp/rbuild/lib/pmpi/libcollx_mpi.so $3 /tmp/rbuild/test/pmpi_random $1 300 > g.$1.$i.log 2>&1 &
  job=$!
  hung=0 last=0 same=0
  while kill -0 $job 2>/dev/null; do
    sleep 1
    size=$(stat -c %s g.$1.$i.log)
    if [ "$size" = "$last" ]; then same=$((same + 1)); else same=0; last=$size; fi
    if [ $same -ge 2 ] && [ $hung -eq 0 ] && [ $(grep -c "^trace" g.$1.$i.log) -lt 1300 ]; then
      hung=1
      for pid in $(pgrep -x pmpi_random); do
        (gdb -p $pid -batch -ex "thread apply all bt" > g.$1.$i.gdb.$pid 2>&1) &
      done
      wait $(jobs -p | grep -v "^$job$" | grep -v "^$hog$") 2>/dev/null
      sleep 3
    fi
  done
  wait $job
  rc=$?
  echo "$1 $i rc=$rc hung=$hung $(( $(date +%s) - start )) s $(tail -1 g.$1.$i.log)"
  [ $rc -eq 0 ] && [ $hung -eq 0 ] && rm g.$1.$i.log
done
kill $hog
