#!/usr/bin/env bash
# As tsan-preload.sh, on pretended nodes: 3 ranks on nodes of 2 and 1 (hierarchical, UCX over
# TCP between them), two threads per process, 200 steps. Usage: tsan-preload-nodes.sh FIRST
# LAST (from the repository's root).
mkdir -p /tmp/tsanrp
export UCX_MEM_EVENTS=no TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" COLLX_TIMEOUT=60
lib="$(gcc -print-file-name=libtsan.so):build-tsan/lib/pmpi/libcollx_mpi.so"
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'
for seed in $(seq $1 $2); do
  start=$SECONDS
  test/run_preloaded.sh "$lib" 3 bash -c "$node" _ build/test/pmpi_random $seed 200 --threads \
    > /tmp/tsanrp/u$seed-n3.log 2>&1
  echo "seed $seed n3-uneven-threads rc=$? $((SECONDS - start)) s"
done
