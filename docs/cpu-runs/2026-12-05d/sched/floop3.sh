#!/bin/bash
# floop3.sh N SEED: floop.sh with thread groups recorded; a run still going after 12 s gets three
# copies of /sys/kernel/debug/sched/debug and every thread's backtrace (gdb), in keep2/
T=/sys/kernel/tracing
echo 1 > $T/options/record-tgid
cd /tmp/st
for i in $(seq 1 $1); do
  rm -rf /tmp/ct; mkdir -p /tmp/ct
  echo 0 > $T/tracing_on; echo > $T/trace; echo 1 > $T/tracing_on
  t0=$(date +%s.%N)
  env CXDBG_DIR=/tmp/ct CXDBG_FTRACE=1 PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=${TO:-60} timeout 300 /work/main/test/run_preloaded.sh \
    /tmp/dbgsrc/b/lib/pmpi/libcollx_mpi.so 5 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' \
    _ /tmp/dbgsrc/b/test/pmpi_random $2 300 > r.log 2>&1 &
  job=$!
  dumped=0
  while kill -0 $job 2>/dev/null; do
    sleep 0.5
    if [ $dumped = 0 ] && [ $(echo "$(date +%s.%N) - $t0 > 12" | bc) = 1 ]; then
      dumped=1; mkdir -p keep2/run$i
      for k in 1 2 3; do cat /sys/kernel/debug/sched/debug > keep2/run$i/sched-debug.$k.txt; sleep 0.3; done
      for p in $(pgrep -x pmpi_random); do
        for t in /proc/$p/task/*; do echo "$(basename $t) $(cat $t/comm) $(cut -d' ' -f3 $t/stat) $(cat $t/wchan)"; done > keep2/run$i/tasks.$p.txt
        timeout 60 gdb -p $p -batch -ex "thread apply all bt" > keep2/run$i/gdb.$p.txt 2>&1
      done
    fi
  done
  wait $job; rc=$?
  dt=$(echo "$(date +%s.%N) - $t0" | bc)
  echo 0 > $T/tracing_on
  if [ $rc -ne 0 ] || [ $dumped = 1 ] || grep -q "FTRACE stopped" /tmp/ct/* ; then
    mkdir -p keep2/run$i; cp r.log keep2/run$i/; cp /tmp/ct/* keep2/run$i/
    if grep -q "FTRACE stopped" /tmp/ct/*; then cat $T/trace | xz -1 > keep2/run$i/ftrace.xz; cp $T/saved_tgids keep2/run$i/; fi
  fi
  echo "run $i rc=$rc $dt s $(grep -l 'FTRACE stopped' /tmp/ct/* 2>/dev/null | wc -l) dumped=$dumped"
done
