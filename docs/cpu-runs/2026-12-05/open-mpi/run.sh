#!/usr/bin/env bash
# run.sh PRELOAD...: ompi_calls.c (built with Open MPI 4.1.4's mpicc) at 2 and 3 ranks under
# Open MPI's mpirun, without the preload and under each library given.
# Needs openmpi-bin and libopenmpi-dev (Debian 12), which take over the mpi, mpirun and
# mpi-x86_64-linux-gnu alternatives: `update-alternatives --set` them back to MPICH's after.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mpicc.openmpi -O1 -Wall "$here/ompi_calls.c" -o /tmp/ompi_calls || exit 1
for n in 2 3; do
  for pre in "" "$@"; do
    echo "== $n ranks, LD_PRELOAD=${pre:-(none)}"
    timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" \
      -x LD_PRELOAD="$pre" /tmp/ompi_calls 2>&1 | sort | uniq -c
    echo "exit status ${PIPESTATUS[0]}"
  done
done
