#!/usr/bin/env bash
# The preload's conformance program (test/pmpi_conformance) under valgrind memcheck, one log per
# process, in the modes the meson tests run it without special settings (and, last, the
# device-buffer test on host memory):
#   conf.sh   (logs under /tmp/vgr/conf/MODE/)
set -u
lib=/work/main/build/lib/pmpi/libcollx_mpi.so prog=/work/main/build/test/pmpi_conformance
one() {  # NAME NRANKS ENV... -- ARGS...
  local name=$1 n=$2; shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local d=/tmp/vgr/conf/$name
  mkdir -p "$d"
  local start=$SECONDS
  env COLLX_TIMEOUT=120 "${envs[@]}" timeout 900 mpiexec -n "$n" env LD_PRELOAD="$lib" \
    COLLX_MPI_VERBOSE=1 valgrind -q --fair-sched=yes --error-exitcode=9 \
    --leak-check=full --errors-for-leak-kinds=definite --log-file="$d/vg.%p.txt" \
    "$prog" "$@" > "$d/out.txt" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - start)) s: $(grep -a 'passed,' "$d/out.txt" | tail -1) |" \
    "$(grep -a -m1 'MPI_Allreduce calls (all ranks)' "$d/out.txt") |" \
    "$(python3 /tmp/vgr/classify.py "$d"/vg.*.txt | tail -1)"
}
one default 3 --
one thread-multiple 3 -- --thread-multiple
one nonblocking 3 -- --nonblocking
one nonblocking-async0 3 COLLX_ASYNC_MIN=0 -- --nonblocking
one persistent 3 -- --persistent
one persistent-edges-host-copies 3 COLLX_MPI_HOST_COPIES=1 -- --persistent-edges
one large-count 2 -- --large-count
one sessions 3 -- --sessions
one self-callback 2 -- --self-callback
one free-pending 3 -- --free-pending
one request-free 2 -- --request-free
one complex 3 -- --complex
one float16 3 -- --float16
one progress-blocking 3 -- --progress blocking
# The device-buffer preload test on host memory (meson test pmpi_preload_device_host_memory_n3).
prog=/work/main/build/test/mpi_device_test one device-test-host-memory 3 COLLX_MPI_HOST_COPIES=1 \
  -- --host
