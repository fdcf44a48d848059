#!/bin/bash
# forced algorithms, ASan build, misaligned random batches
cd /work/main
T=${T:-build-asan/test/mpi_allreduce_test}
export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
S=${S:-/tmp/stress/forced}
i=0
for seed in $(seq ${SEEDS:-300 305}); do
  for cfg in "2|COLLX_ALLREDUCE_ALGO=shm_cma" "3|COLLX_ALLREDUCE_ALGO=shm_cma COLLX_SHM_CHUNK=4K" "2|COLLX_ALLREDUCE_ALGO=shm_two_shot COLLX_SHM_STORES=streaming" "3|COLLX_ALLREDUCE_ALGO=shm_two_shot COLLX_SHM_STORES=cached COLLX_SHM_CHUNK=4K" "3|COLLX_ALLREDUCE_ALGO=shm_one_shot COLLX_SHM_CHUNK=4K COLLX_SHM_AREAS=3" "3|COLLX_ALLREDUCE_ALGO=ring COLLX_RING_SEGMENT=4K" "3|COLLX_ALLREDUCE_ALGO=rabenseifner COLLX_CMA_MIN=1K" "2|COLLX_ALLREDUCE_ALGO=recursive_doubling" "3|NODES2 COLLX_ALLREDUCE_ALGO=hierarchical COLLX_TUNE_ACROSS=0-1K:ring,1K-inf:rabenseifner" "4|NODES2 COLLX_ALLREDUCE_ALGO=hierarchical COLLX_SHM_CHUNK=4K"; do
    n=${cfg%%|*}; envs=${cfg#*|}
    i=$((i+1))
    wrap=""
    if [[ $envs == *NODES2* ]]; then envs=${envs/NODES2/}; wrap='COLLX_NODE=node-$((PMI_RANK % 2))'; fi
    if [ -n "$wrap" ]; then
      out=$(timeout 300 mpiexec -n $n env COLLX_TIMEOUT=60 $envs bash -c "$wrap exec \"\$@\"" _ $T --random $seed 100 2>&1); rc=$?
    else
      out=$(timeout 300 mpiexec -n $n env COLLX_TIMEOUT=60 $envs $T --random $seed 100 2>&1); rc=$?
    fi
    echo "$i seed=$seed n=$n env=[$cfg] rc=$rc $(echo "$out" | grep -a 'passed,' | tail -1)" >> $S-summary.txt
    if [ $rc -ne 0 ]; then echo "=== $i seed=$seed n=$n [$cfg]" >> $S-fail.txt; echo "$out" | head -40 >> $S-fail.txt; fi
  done
done
echo DONE >> $S-summary.txt
