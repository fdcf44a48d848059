#!/usr/bin/env bash
# rerun.sh N BASE NEW: n5-uneven of seed 3597 (tools/run-random-programs' "uneven" set: 5
# ranks, pretended nodes of 3 and 2), N times with each build, alternating; a failed run's
# output is kept as failed.NAME.I.log.
set -u
n=$1 base=$2 new=$3
pre=/work/main/test/run_preloaded.sh
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'
for i in $(seq 1 "$n"); do
  for name in base new; do
    b=$base; [ $name = new ] && b=$new
    start=$(date +%s.%N)
    env COLLX_TIMEOUT=20 timeout 300 "$pre" "$b/lib/pmpi/libcollx_mpi.so" 5 \
      bash -c "$node" _ "$b/test/pmpi_random" 3597 300 > out.log 2>&1
    rc=$?
    printf '%s %d rc=%d %.1f s %s\n' $name "$i" $rc "$(echo "$(date +%s.%N) - $start" | bc)" \
      "$(grep -a 'passed,' out.log | tail -1)"
    [ $rc -eq 0 ] || cp out.log "failed.$name.$i.log"
  done
done
rm -f out.log
