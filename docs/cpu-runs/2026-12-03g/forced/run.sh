#!/usr/bin/env bash
# Random preload programs with each algorithm forced (COLLX_ALLREDUCE_ALGO inherited by every
# run but n3-ring), seeds FIRST..LAST of the one-node set, then the uneven set.
first=$1 last=$2
for algo in recursive_doubling rabenseifner shm_one_shot shm_two_shot shm_cma hierarchical; do
  echo "## COLLX_ALLREDUCE_ALGO=$algo"
  COLLX_ALLREDUCE_ALGO=$algo /work/main/tools/run-random-programs /tmp/rbuild "$first" "$last" 200
  COLLX_ALLREDUCE_ALGO=$algo /work/main/tools/run-random-programs /tmp/rbuild "$first" "$last" \
    200 uneven
done
