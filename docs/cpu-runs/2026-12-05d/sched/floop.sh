#!/bin/bash
# floop.sh N SEED: loop.sh with sched_switch/wakeup tracing; keeps the ftrace of runs that stopped it
T=/sys/kernel/tracing
cd /tmp/st
for i in $(seq 1 $1); do
  rm -rf /tmp/ct; mkdir -p /tmp/ct
  echo 0 > $T/tracing_on; echo > $T/trace; echo 1 > $T/tracing_on
  t0=$(date +%s.%N)
  env CXDBG_DIR=/tmp/ct CXDBG_FTRACE=1 PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=${TO:-60} timeout 300 /work/main/test/run_preloaded.sh \
    /tmp/dbgsrc/b/lib/pmpi/libcollx_mpi.so 5 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' \
    _ /tmp/dbgsrc/b/test/pmpi_random $2 300 > r.log 2>&1
  rc=$?
  dt=$(echo "$(date +%s.%N) - $t0" | bc)
  echo 0 > $T/tracing_on
  if [ $rc -ne 0 ] || [ $(echo "$dt > 8" | bc) = 1 ] || grep -q "FTRACE stopped" /tmp/ct/* ; then
    mkdir -p keep/run$i; cp r.log keep/run$i/; cp /tmp/ct/* keep/run$i/
    if grep -q "FTRACE stopped" /tmp/ct/*; then cat $T/trace | xz -1 > keep/run$i/ftrace.xz; fi
  fi
  echo "run $i rc=$rc $dt s $(grep -l 'FTRACE stopped' /tmp/ct/* 2>/dev/null | wc -l)"
done
