#!/usr/bin/env bash
# ScaLAPACK 2.2.1's test drivers (Debian 12's scalapack-mpi-test, the MPICH build), unmodified,
# with their own input files, 4 ranks, without and with libcollx's preload:
#   run.sh PRELOAD_LIB DRIVER...   (in a folder holding the drivers' .dat files)
# One line per run: driver, setting, exit status, seconds, the driver's pass/fail counts and,
# preloaded, libcollx's statistics of MPI_Allreduce calls (served, passed through and why).
# SETTINGS: which runs ("plain preload"); SHIM: a library preloaded in every run too
# (hang/est_shim.so: ScaLAPACK's fix for p?lacon's uninitialised EST, hang/README.md).
lib=$1; shift
T=/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests
for d in "$@"; do
  for setting in ${SETTINGS:-plain preload}; do
    pre=(${SHIM:+env LD_PRELOAD=$SHIM})
    [ $setting = preload ] && pre=(env "LD_PRELOAD=$lib${SHIM:+ $SHIM}" COLLX_MPI_VERBOSE=1)
    start=$(date +%s.%N)
    timeout 900 mpiexec -n 4 "${pre[@]}" "$T/$d" > "$d.$setting.txt" 2>&1
    rc=$?
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    counts=$(grep -E "tests (completed|skipped)" "$d.$setting.txt" |
      awk '{s[NR]=$1} END {for (i=1;i<=NR;i++) printf "%s ", s[i]}')
    stats=$(grep -a "libcollx_mpi:" "$d.$setting.txt" | sed 's/libcollx_mpi: *//' | tr '\n' ';')
    printf '%s %s rc=%d %.0f s | passed/failed/skipped: %s| %s\n' "$d" "$setting" "$rc" "$secs" \
      "$counts" "$stats"
  done
done
