#!/usr/bin/env bash
# Random preload programs under the ASan + UBSan preload: 3 ranks on pretended nodes of 2
# and 1 (hierarchical), and 3 ranks with COLLX_ASYNC_MIN=0, 300 steps.
mkdir -p /tmp/asanrp  # (run from the repository's root)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS="suppressions=$PWD/test/lsan-mpich.supp" COLLX_TIMEOUT=20
lib="$(gcc -print-file-name=libasan.so):build-asan/lib/pmpi/libcollx_mpi.so"
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'
for seed in $(seq $1 $2); do
  start=$SECONDS
  test/run_preloaded.sh "$lib" 3 bash -c "$node" _ build/test/pmpi_random $seed 300 > /tmp/asanrp/u$seed-n3.log 2>&1
  echo "seed $seed n3-uneven rc=$? $((SECONDS - start)) s"
  start=$SECONDS
  COLLX_ASYNC_MIN=0 test/run_preloaded.sh "$lib" 3 build/test/pmpi_random $seed 300 --threads > /tmp/asanrp/a$seed-n3.log 2>&1
  echo "seed $seed n3-async0-threads rc=$? $((SECONDS - start)) s"
done
