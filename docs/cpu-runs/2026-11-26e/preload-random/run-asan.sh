#!/usr/bin/env bash
# run.sh with the preload built with ASan + UBSan (halting on any report), under the release
# build's program:  run-asan.sh RELEASE_BUILD ASAN_BUILD FIRST_SEED LAST_SEED STEPS
# Leak checking is off: MPICH leaks the communicators a program leaves to MPI_Finalize (seen
# without the preload too); CI's ASan check runs seeds that free them all, with it on.
set -u
a=$(cd "$2" && pwd)
LIB="$(gcc -print-file-name=libasan.so):$a/lib/pmpi/libcollx_mpi.so" \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=0 \
  exec "$(dirname "$0")/run.sh" "$1" "$3" "$4" "$5"
