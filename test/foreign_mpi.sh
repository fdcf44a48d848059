#!/usr/bin/env bash
# foreign_mpi.sh PRELOAD_LIB PROGRAM: runs PROGRAM (test/foreign_mpi_test.cc, linked with a
# stand-in for another MPI's library) under the preload. It must pass (every exported function
# reaching the stand-in as called), and stderr must say, once, that interception is off and why.
set -uo pipefail
log=$(mktemp)
LD_PRELOAD="$1" "$2" 2> "$log"
status=$?
cat "$log" >&2
said=$(grep -c "^libcollx_mpi: interception off: this process's MPI is .*libforeign_mpi\.so, \
not .*, which libcollx_mpi\.so was built with" "$log")
rm -f "$log"
[ $status -eq 0 ] || exit $status
if [ "$said" -ne 1 ]; then
  echo "foreign_mpi.sh: stderr said $said times that interception is off (want 1)" >&2
  exit 1
fi
