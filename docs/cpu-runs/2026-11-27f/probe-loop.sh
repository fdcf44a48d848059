#!/bin/bash
cd /tmp/dbg
L=$PWD/bdbg/lib/pmpi/libcollx_mpi.so
for s in $(seq $1 $2); do
  COLLX_TIMEOUT=20 timeout 100 /work/main/test/run_preloaded.sh $L 4 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' _ bdbg/test/pmpi_random $s 300 > /tmp/dbg/r$s.log 2>&1; rc=$?
  if grep -q -E "DBG|not matched" /tmp/dbg/r$s.log || [ $rc -ne 0 ]; then echo "seed $s rc=$rc" >> /tmp/dbg/hits; grep -E "DBG|not matched" /tmp/dbg/r$s.log >> /tmp/dbg/hits; else rm /tmp/dbg/r$s.log; fi
  echo $s > /tmp/dbg/last
done
