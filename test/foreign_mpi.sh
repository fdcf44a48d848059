#!/usr/bin/env bash
# foreign_mpi.sh PRELOAD_LIB PROGRAM EXPORTS_H DLOPEN_PROGRAM STAND_IN: runs PROGRAM
# (test/foreign_mpi_test.cc, linked with a stand-in for another MPI's library) under the
# preload. It must pass (every function of EXPORTS_H reaching the stand-in as called), and
# stderr must say, once, that interception is off and why. The preload must export exactly the
# functions EXPORTS_H names: one it exported besides would not go through the gate. Then
# DLOPEN_PROGRAM (the same file, loading STAND_IN through dlopen) must pass under the preload:
# MPI_Init and MPI_Init_thread refused, each saying why once.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_PRELOAD="$1" "$2" 2> "$log"
status=$?
cat "$log" >&2
[ $status -eq 0 ] || exit $status
said=$(grep -c "^libcollx_mpi: interception off: this process's MPI is .*libforeign_mpi\.so, \
not .*, which libcollx_mpi\.so was built with" "$log")
if [ "$said" -ne 1 ]; then
  echo "foreign_mpi.sh: stderr said $said times that interception is off (want 1)" >&2
  exit 1
fi
exported=$(nm -D --defined-only "$1" | awk '{ print $3 }' | sort)
listed=$(grep -o 'X([A-Za-z0-9_]*)' "$3" | sed 's/^X(\(.*\))$/\1/' | sort)
if [ "$exported" != "$listed" ]; then
  echo "foreign_mpi.sh: the preload's exports differ from $3's list:" >&2
  diff <(echo "$listed") <(echo "$exported") >&2
  exit 1
fi
LD_PRELOAD="$1" "$4" "$5" 2> "$log"
status=$?
cat "$log" >&2
[ $status -eq 0 ] || exit $status
said=$(grep -c "^libcollx_mpi: MPI_Init refused: this process loaded another MPI, \
.*libforeign_mpi\.so, after it started" "$log")
if [ "$said" -ne 2 ]; then
  echo "foreign_mpi.sh: stderr said $said times that MPI_Init was refused (want 2)" >&2
  exit 1
fi
