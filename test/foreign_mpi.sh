#!/usr/bin/env bash
# foreign_mpi.sh PRELOAD_LIB PROGRAM EXPORTS_H: runs PROGRAM (test/foreign_mpi_test.cc, linked
# with a stand-in for another MPI's library) under the preload. It must pass (every function of
# EXPORTS_H reaching the stand-in as called), and stderr must say, once, that interception is
# off and why. And the preload must export exactly the functions EXPORTS_H names: one it
# exported besides would not go through the gate.
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
exported=$(nm -D --defined-only "$1" | awk '{ print $3 }' | sort)
listed=$(grep -o 'X([A-Za-z0-9_]*)' "$3" | sed 's/^X(\(.*\))$/\1/' | sort)
if [ "$exported" != "$listed" ]; then
  echo "foreign_mpi.sh: the preload's exports differ from $3's list:" >&2
  diff <(echo "$listed") <(echo "$exported") >&2
  exit 1
fi
