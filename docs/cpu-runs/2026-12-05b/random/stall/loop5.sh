#!/bin/bash
# loop5.sh N SEED: n5-uneven, traced; one line per run (seconds, exit status); keeps failing logs
for i in $(seq 1 $1); do
  t0=$(date +%s.%N)
  env PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=${TO:-20} timeout 300 /work/main/test/run_preloaded.sh \
    /tmp/rbuild/lib/pmpi/libcollx_mpi.so 5 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' \
    _ /tmp/rbuild/test/pmpi_random $2 300 > r.log 2>&1
  rc=$?
  [ $rc -eq 0 ] || cp r.log fail.$2.run$i.log
  echo "run $i rc=$rc $(echo "$(date +%s.%N) - $t0" | bc) s"
done
