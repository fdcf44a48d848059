#!/usr/bin/env bash
# Random preload programs under the ASan + UBSan preload: 4 ranks on two pretended nodes
# (hierarchical, UCX over TCP between them) and 3 ranks, two threads each, COLLX_CHECK=1;
# 300 steps. Usage: asan-preload-3.sh FIRST LAST (from the repository's root).
mkdir -p /tmp/asanrp
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS="suppressions=$PWD/test/lsan-mpich.supp" COLLX_TIMEOUT=20
lib="$(gcc -print-file-name=libasan.so):build-asan/lib/pmpi/libcollx_mpi.so"
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'
for seed in $(seq $1 $2); do
  start=$SECONDS
  test/run_preloaded.sh "$lib" 4 bash -c "$node" _ build/test/pmpi_random $seed 300 > /tmp/asanrp/t$seed-n4.log 2>&1
  echo "seed $seed n4-two-nodes rc=$? $((SECONDS - start)) s"
  start=$SECONDS
  COLLX_CHECK=1 test/run_preloaded.sh "$lib" 3 build/test/pmpi_random $seed 300 --threads > /tmp/asanrp/c$seed-n3.log 2>&1
  echo "seed $seed n3-check-threads rc=$? $((SECONDS - start)) s"
done
