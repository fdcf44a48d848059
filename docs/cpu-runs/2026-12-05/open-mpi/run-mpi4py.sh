#!/usr/bin/env bash
# run-mpi4py.sh PRELOAD...: Debian 12's python3-mpi4py (built for Open MPI 4.1.4, which it
# pulls in) running mpi4py_allreduce.py at 2 ranks under Open MPI's mpirun, without the preload
# and under each library given (/usr/bin/python3: Debian's, which has the package).
set -u
here=$(cd "$(dirname "$0")" && pwd)
for pre in "" "$@"; do
  echo "== LD_PRELOAD=${pre:-(none)}"
  timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 -x LD_PRELOAD="$pre" \
    /usr/bin/python3 "$here/mpi4py_allreduce.py" 2>&1 | sort | uniq -c
  echo "exit status ${PIPESTATUS[0]}"
done
