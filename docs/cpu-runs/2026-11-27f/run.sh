#!/bin/bash
cd "${REPO:-/work/main}"
L=$PWD/build/lib/pmpi/libcollx_mpi.so
for s in $(seq $1 $2); do
  t0=$(date +%s.%N)
  COLLX_TIMEOUT=20 timeout 120 test/run_preloaded.sh $L 4 bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' _ build/test/pmpi_random $s 300 > /tmp/loop/s$s.log 2>&1
  rc=$?
  t1=$(date +%s.%N)
  um=$(grep -c -i "not matched\|unexpected tag" /tmp/loop/s$s.log)
  echo "$s rc=$rc t=$(echo "$t1-$t0"|bc) unmatched=$um" >> /tmp/loop/summary
  [ $rc -eq 0 ] && [ $um -eq 0 ] && rm -f /tmp/loop/s$s.log
done
echo done >> /tmp/loop/summary
