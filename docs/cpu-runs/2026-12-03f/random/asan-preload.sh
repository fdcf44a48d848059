#!/usr/bin/env bash
# Random preload programs under the ASan + UBSan preload (as CI's preload check runs its
# seeds), from the repository's root: asan-preload.sh SET FIRST LAST, one line per run.
#   one-node  3 ranks, and 2 ranks with two threads each; 200 steps
#   uneven    3 ranks on pretended nodes of 2 and 1 (hierarchical), and 3 ranks with two
#             threads each and COLLX_ASYNC_MIN=0; 300 steps
#   nodes     4 ranks on two pretended nodes (UCX over TCP between them), and 3 ranks with two
#             threads each and COLLX_CHECK=1; 300 steps
# (Seeds 3631 - 3645 ran as one-node, 3646 - 3665 as uneven, 3666 - 3690 as nodes, by first
# versions of this script with the same settings; their lines name the runs a little differently.)
mkdir -p /tmp/asanrp
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS="suppressions=$PWD/test/lsan-mpich.supp" COLLX_TIMEOUT=20
lib="$(gcc -print-file-name=libasan.so):build-asan/lib/pmpi/libcollx_mpi.so"
node='COLLX_NODE=node-$((PMI_RANK % 2)) exec "$@"'
set=$1
run() {  # run NAME RANKS [VAR=VALUE...] -- COMMAND...: one run, its log in /tmp/asanrp
  local name=$1 n=$2 start=$SECONDS vars=()
  shift 2
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env "${vars[@]}" test/run_preloaded.sh "$lib" "$n" "$@" > "/tmp/asanrp/$name-$seed.log" 2>&1
  echo "seed $seed $name rc=$? $((SECONDS - start)) s"
}
for seed in $(seq "$2" "$3"); do
  prog=(build/test/pmpi_random "$seed")
  case $set in
    one-node)
      run n3 3 -- "${prog[@]}" 200
      run n2-threads 2 -- "${prog[@]}" 200 --threads ;;
    uneven)
      run n3-uneven 3 -- bash -c "$node" _ "${prog[@]}" 300
      run n3-async0-threads 3 COLLX_ASYNC_MIN=0 -- "${prog[@]}" 300 --threads ;;
    nodes)
      run n4-two-nodes 4 -- bash -c "$node" _ "${prog[@]}" 300
      run n3-check-threads 3 COLLX_CHECK=1 -- "${prog[@]}" 300 --threads ;;
    *) echo "SET must be one-node, uneven or nodes" >&2; exit 2 ;;
  esac
done
