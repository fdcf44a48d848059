#!/usr/bin/env bash
# Each shared-memory algorithm forced through test/mpi_allreduce_test (its matrix, several
# communicators, the random batches, polling, COLLX_CHECK) over 2 - 8 processes, with chunks
# of 4K (2 and 4 areas) and 128K (3 areas). Run from the repository root with build/ made:
#   docs/cpu-runs/2026-11-29b/shm-sweep/run.sh > docs/cpu-runs/2026-11-29b/shm-sweep/out.txt
for algo in shm_one_shot shm_two_shot shm_cma; do
  for n in 2 3 4 5 6 7 8; do
    for ca in 4K:2 4K:4 128K:3; do
      start=$SECONDS
      COLLX_ALLREDUCE_ALGO=$algo COLLX_SHM_CHUNK=${ca%:*} COLLX_SHM_AREAS=${ca#*:} \
        timeout 300 mpiexec -n $n build/test/mpi_allreduce_test > /tmp/shm-sweep.log 2>&1
      rc=$?
      echo "$algo n=$n chunk=${ca%:*} areas=${ca#*:} rc=$rc $(grep -a "passed," /tmp/shm-sweep.log)" \
           "($((SECONDS - start)) s)"
    done
  done
done
