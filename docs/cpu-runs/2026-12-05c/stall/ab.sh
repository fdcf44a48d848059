#!/bin/bash
# ab.sh N SEED: alternates runs without and with CXDBG_SLEEP=1 (waits sleep 50 us per poll after
# 2 ms of yielding), n5-uneven, COLLX_TIMEOUT=60; one line per run: arm, seconds, exit status.
for i in $(seq 1 $1); do
  for arm in yield sleep; do
    extra=""; [ $arm = sleep ] && extra="CXDBG_SLEEP=1"
    t0=$(date +%s.%N)
    env $extra COLLX_TIMEOUT=60 timeout 300 /work/main/test/run_preloaded.sh \
      /tmp/dbgsrc/b/lib/pmpi/libcollx_mpi.so 5 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' \
      _ /tmp/dbgsrc/b/test/pmpi_random $2 300 > ab.log 2>&1
    rc=$?
    echo "$arm $(echo "$(date +%s.%N) - $t0" | bc) rc=$rc"
  done
done
