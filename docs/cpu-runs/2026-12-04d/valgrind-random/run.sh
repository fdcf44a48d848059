#!/usr/bin/env bash
# Random preload programs (test/pmpi_random) under valgrind memcheck, one log per process:
#   run.sh FIRST LAST STEPS [uneven]   (logs under /tmp/vgr/logs/SETTING.SEED/)
set -u
first=$1 last=$2 steps=$3 set=${4:-one-node}
lib=/work/main/build/lib/pmpi/libcollx_mpi.so prog=/work/main/build/test/pmpi_random
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'  # two pretended nodes, round-robin
one() {  # NAME NRANKS ENV... -- [WRAPPER...] (valgrind and the program follow)
  local name=$1 n=$2; shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local d=/tmp/vgr/logs/$name.$seed
  mkdir -p "$d"
  local start=$SECONDS
  env COLLX_TIMEOUT=120 "${envs[@]}" timeout 900 mpiexec -n "$n" env LD_PRELOAD="$lib" \
    COLLX_MPI_VERBOSE=1 "$@" valgrind -q --fair-sched=yes --error-exitcode=9 \
    --leak-check=full --errors-for-leak-kinds=definite --log-file="$d/vg.%p.txt" \
    "$prog" "$seed" "$steps" ${extra:-} > "$d/out.txt" 2>&1
  local rc=$?
  echo "$name seed $seed rc=$rc $((SECONDS - start)) s: $(grep -a 'passed,' "$d/out.txt" |
    tail -1) | $(python3 /tmp/vgr/classify.py "$d"/vg.*.txt | tail -1)"
}
for seed in $(seq "$first" "$last"); do
  if [ "$set" = uneven ]; then  # pretended nodes of 2 and 1, and of 3 and 2
    one n3-uneven 3 -- bash -c "$node" _
    extra=--threads one n3-uneven-threads 3 -- bash -c "$node" _
    one n5-uneven 5 -- bash -c "$node" _
    continue
  fi
  one n2 2 --
  one n3 3 --
  extra=--threads one n2-threads 2 --
  one n4-two-nodes 4 -- bash -c "$node" _
  one n3-async0-check 3 COLLX_ASYNC_MIN=0 COLLX_CHECK=1 --
done
