#!/bin/bash
# The random batches over seeds x 10 settings. T: the test binary; SEEDS: "first last";
# OUT: the prefix of the summary and failure files. As run (see README.md):
#   T=build/test/mpi_allreduce_test SEEDS="100 140" OUT=release        (and "400 419", release-2)
#   T=build-asan/test/mpi_allreduce_test SEEDS="200 207" OUT=asan      (ASan + UBSan)
cd "$(git rev-parse --show-toplevel)"
T=${T:-build/test/mpi_allreduce_test}
OUT=${OUT:-/tmp/stress}
export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
i=0
for seed in $(seq ${SEEDS:-100 140}); do
  for cfg in "2|" "3|" "4|COLLX_SHM_CHUNK=4K" "3|COLLX_ASYNC_MIN=0" "4|NODES2" "3|NODES2" "2|COLLX_SHM_AREAS=2 COLLX_CHECK=1" "5|COLLX_SHM_CHUNK=4K COLLX_SPIN=0" "4|COLLX_RING_SEGMENT=4K COLLX_TUNE=0-1K:recursive_doubling,1K-8K:rabenseifner,8K-inf:ring" "4|NODES2 COLLX_SHM_CHUNK=4K COLLX_ASYNC_MIN=0"; do
    n=${cfg%%|*}; envs=${cfg#*|}
    i=$((i+1))
    wrap=""
    if [[ $envs == *NODES2* ]]; then envs=${envs/NODES2/}; wrap='COLLX_NODE=node-$((PMI_RANK % 2))'; fi
    start=$(date +%s.%N)
    if [ -n "$wrap" ]; then
      out=$(timeout 300 mpiexec -n $n env COLLX_TIMEOUT=60 $envs bash -c "$wrap exec \"\$@\"" _ $T --random $seed 150 2>&1); rc=$?
    else
      out=$(timeout 300 mpiexec -n $n env COLLX_TIMEOUT=60 $envs $T --random $seed 150 2>&1); rc=$?
    fi
    end=$(date +%s.%N)
    echo "$i seed=$seed n=$n env=[$cfg] rc=$rc t=$(echo "$end - $start" | bc) $(echo "$out" | grep -a 'passed,' | tail -1)" >> $OUT-summary.txt
    if [ $rc -ne 0 ]; then echo "=== $i seed=$seed n=$n [$cfg]" >> $OUT-fail.txt; echo "$out" | head -30 >> $OUT-fail.txt; fi
  done
done
echo DONE >> $OUT-summary.txt
