#!/bin/bash
# loop.sh N SEED: n5-uneven with trace; keeps failing logs
f=0
for i in $(seq 1 $1); do
  env PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=${TO:-20} timeout 300 /work/main/test/run_preloaded.sh /tmp/rbuild/lib/pmpi/libcollx_mpi.so 5 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' _ /tmp/rbuild/test/pmpi_random $2 300 > r.log 2>&1 || { f=$((f+1)); cp r.log fail.$2.$i.log; echo "fail $i"; }
done
echo "fails=$f of $1"
