#!/usr/bin/env bash
# Random preload programs, two threads per process, under the preload built with TSan
# (build-tsan/lib/pmpi/libcollx_mpi.so after the TSan runtime; MPICH and the program are not
# instrumented): 2 ranks, and 3 ranks with COLLX_ASYNC_MIN=0; 300 steps. A run fails on any
# TSan report (exit code 66). Usage: tsan-preload.sh FIRST LAST (from the repository's root).
mkdir -p /tmp/tsanrp
export UCX_MEM_EVENTS=no TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" COLLX_TIMEOUT=60
lib="$(gcc -print-file-name=libtsan.so):build-tsan/lib/pmpi/libcollx_mpi.so"
for seed in $(seq $1 $2); do
  start=$SECONDS
  test/run_preloaded.sh "$lib" 2 build/test/pmpi_random $seed 300 --threads > /tmp/tsanrp/t$seed-n2.log 2>&1
  echo "seed $seed n2-threads rc=$? $((SECONDS - start)) s"
  start=$SECONDS
  COLLX_ASYNC_MIN=0 test/run_preloaded.sh "$lib" 3 build/test/pmpi_random $seed 300 --threads > /tmp/tsanrp/a$seed-n3.log 2>&1
  echo "seed $seed n3-async0-threads rc=$? $((SECONDS - start)) s"
done
