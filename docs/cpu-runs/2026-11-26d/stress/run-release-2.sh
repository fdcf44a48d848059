#!/bin/bash
# stress: configs x seeds; logs failures
cd /work/main
T=build/test/mpi_allreduce_test
i=0
for seed in $(seq 400 419); do
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
    echo "$i seed=$seed n=$n env=[$cfg] rc=$rc t=$(echo "$end - $start" | bc) $(echo "$out" | grep -a 'passed,' | tail -1)" >> /tmp/stress/r2/summary.txt
    if [ $rc -ne 0 ]; then echo "=== $i seed=$seed n=$n [$cfg]" >> /tmp/stress/r2/fail.txt; echo "$out" | head -30 >> /tmp/stress/r2/fail.txt; fi
  done
done
echo DONE >> /tmp/stress/r2/summary.txt
