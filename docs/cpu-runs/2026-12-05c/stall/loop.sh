#!/bin/bash
# loop.sh N SEED: n5-uneven with the scratch trace; keeps traces of runs over 8 s
for i in $(seq 1 $1); do
  rm -rf /tmp/ct; mkdir -p /tmp/ct
  t0=$(date +%s.%N)
  env CXDBG_DIR=/tmp/ct PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=${TO:-60} timeout 300 /work/main/test/run_preloaded.sh \
    /tmp/dbgsrc/b/lib/pmpi/libcollx_mpi.so 5 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' \
    _ /tmp/dbgsrc/b/test/pmpi_random $2 300 > r.log 2>&1
  rc=$?
  dt=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ $rc -ne 0 ] || [ $(echo "$dt > 8" | bc) = 1 ] || ls -d gap.* >/dev/null 2>&1; then
    mkdir -p keep/run$i; cp r.log keep/run$i/; cp /tmp/ct/* keep/run$i/; mv gap.* keep/run$i/ 2>/dev/null
  fi
  rm -rf gap.*
  echo "run $i rc=$rc $dt s"
done
