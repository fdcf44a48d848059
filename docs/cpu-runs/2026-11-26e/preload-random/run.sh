#!/usr/bin/env bash
# Random MPI programs (test/pmpi_random.cc) under the preload, by seed and setting.
#   run.sh BUILD_DIR FIRST_SEED LAST_SEED STEPS > summary.txt
# One line per run: setting, seed, exit status, the program's "N passed, N failed" and
# run_preloaded.sh's last line. COLLX_TIMEOUT=20 turns a wait at the wrong place into a failure.
# LIB overrides the preloaded library (run-asan.sh: the ASan runtime, then an ASan build's).
set -u
b=$(cd "$1" && pwd) first=$2 last=$3 steps=$4
lib=${LIB:-$b/lib/pmpi/libcollx_mpi.so} prog=$b/test/pmpi_random
pre=$(dirname "$0")/../../../../test/run_preloaded.sh
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'
run() {  # NAME NRANKS ENV... -- ARGS...
  local name=$1 n=$2; shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local log; log=$(mktemp)
  env COLLX_TIMEOUT=20 "${envs[@]}" timeout 300 "$pre" "$lib" "$n" "$@" > "$log" 2>&1
  local rc=$?
  echo "$name seed $seed rc=$rc $(grep -a 'passed,' "$log" | tail -1) | $(tail -1 "$log")"
  [ $rc -eq 0 ] || cp "$log" "failed.$name.$seed.log"
  rm -f "$log"
}
for seed in $(seq "$first" "$last"); do
  run n3 3 -- "$prog" "$seed" "$steps"
  run n2-threads 2 -- "$prog" "$seed" "$steps" --threads
  run n3-threads 3 -- "$prog" "$seed" "$steps" --threads
  run n4-two-nodes 4 -- bash -c "$node" _ "$prog" "$seed" "$steps"
  run n3-async0 3 COLLX_ASYNC_MIN=0 -- "$prog" "$seed" "$steps"
  run n3-check 3 COLLX_CHECK=1 -- "$prog" "$seed" "$steps"
  run n3-ring 3 COLLX_ALLREDUCE_ALGO=ring -- "$prog" "$seed" "$steps"
  run n2-chunk4k 2 COLLX_SHM_CHUNK=4096 -- "$prog" "$seed" "$steps"
  run n4 4 -- "$prog" "$seed" "$steps"
  run n3-host-copies 3 COLLX_MPI_HOST_COPIES=1 -- "$prog" "$seed" "$steps"
done
