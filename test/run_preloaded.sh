#!/usr/bin/env bash
# run_preloaded.sh PRELOAD_LIB NRANKS PROGRAM [ARGS...]: runs an MPI program under the PMPI
# interposer with COLLX_MPI_VERBOSE=1, fails if the program fails or if libcollx served no
# MPI_Allreduce call (when EXPECT_SERVED=1, the default).
set -uo pipefail
lib=$1 n=$2
shift 2
log=$(mktemp)
mpiexec -n "$n" env LD_PRELOAD="$lib" COLLX_MPI_VERBOSE=1 "$@" 2> >(tee "$log" >&2)
status=$?
wait
served=$(sed -n 's/.*MPI_Allreduce calls (all ranks): \([0-9]*\) served.*/\1/p' "$log")
rm -f "$log"
[ $status -eq 0 ] || exit $status
if [ "${EXPECT_SERVED:-1}" = 1 ] && [ "${served:-0}" -eq 0 ]; then
  echo "libcollx served no MPI_Allreduce call under the preload" >&2
  exit 1
fi
echo "libcollx served ${served:-0} MPI_Allreduce calls"
