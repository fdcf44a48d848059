#!/usr/bin/env bash
# trace.sh N BUILD: n5-uneven of seed 3597 traced (PMPI_RANDOM_TRACE=1) up to N times, until a
# run fails; its output is kept as trace-failed.I.log.
set -u
pre=/work/main/test/run_preloaded.sh
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'
for i in $(seq 1 "$1"); do
  PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=20 timeout 300 "$pre" "$2/lib/pmpi/libcollx_mpi.so" 5 \
    bash -c "$node" _ "$2/test/pmpi_random" 3597 300 > trace.log 2>&1
  rc=$?
  echo "run $i rc=$rc"
  if [ $rc -ne 0 ]; then cp trace.log "trace-failed.$i.log"; break; fi
done
rm -f trace.log
