#!/usr/bin/env bash
# Random preload programs under the ASan + UBSan preload (as CI's check, other seeds).
mkdir -p /tmp/asanrp  # (run from the repository's root)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS="suppressions=$PWD/test/lsan-mpich.supp" COLLX_TIMEOUT=20
lib="$(gcc -print-file-name=libasan.so):build-asan/lib/pmpi/libcollx_mpi.so"
for seed in $(seq $1 $2); do
  for spec in "3:" "2:--threads"; do
    n=${spec%%:*} extra=${spec#*:}
    start=$SECONDS
    test/run_preloaded.sh "$lib" $n build/test/pmpi_random $seed 200 $extra > /tmp/asanrp/s$seed-n$n$extra.log 2>&1
    echo "seed $seed n$n $extra rc=$? $((SECONDS - start)) s"
  done
done
