#!/bin/bash
# ab.sh N SEED: n5-uneven runs of pmpi_random alternating A (/tmp/abA/b: HEAD) and
# B (/work/main/build: naps in waits), optionally beside a CPU hog in its own session (HOG=1)
cd /tmp/ab
if [ "${HOG:-0}" = 1 ]; then setsid bash -c 'while :; do :; done' & hog=$!; fi
for i in $(seq 1 $1); do
  for v in A B; do
    if [ $v = A ]; then b=/tmp/abA/b; else b=/work/main/build; fi
    t0=$(date +%s.%N)
    env COLLX_TIMEOUT=60 timeout 300 /work/main/test/run_preloaded.sh $b/lib/pmpi/libcollx_mpi.so 5 \
      bash -c 'COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"' _ $b/test/pmpi_random $2 300 > r.$v.log 2>&1
    rc=$?
    echo "$v $i rc=$rc $(echo "$(date +%s.%N) - $t0" | bc)"
  done
done
[ -n "${hog:-}" ] && kill $hog
