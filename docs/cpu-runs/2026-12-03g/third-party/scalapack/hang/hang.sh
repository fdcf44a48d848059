#!/usr/bin/env bash
# Runs ScaLAPACK's xdllt at 4 ranks (LLT.dat here: its own input with the 2x2 grid only) up to
# TRIES (6) times, until a run stalls (its output unchanged for STALL, 20, seconds); then
# writes every rank's stacks (gdb) to stacks.NAME.TRY.txt and kills it. One line per try.
# PRELOAD=0 runs it without libcollx's preload (NAME plain); ALGO sets COLLX_ALLREDUCE_ALGO
# (NAME: ALGO, else default). SHIM: a library preloaded too (est_shim.so, built from
# est_shim.c here; NAME gets "+shim"). Run in a folder holding LLT.dat.
T=/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests
lib=/work/main/build/lib/pmpi/libcollx_mpi.so
pre=(env "LD_PRELOAD=$lib${SHIM:+ $SHIM}" COLLX_MPI_VERBOSE=1 COLLX_TIMEOUT=300
     ${ALGO:+COLLX_ALLREDUCE_ALGO=$ALGO})
name=${ALGO:-default}
[ "${PRELOAD:-1}" = 0 ] && pre=(${SHIM:+env LD_PRELOAD=$SHIM}) && name=plain
[ -n "${SHIM:-}" ] && name=$name+shim
for try in $(seq "${TRIES:-6}"); do
  timeout 400 mpiexec -n 4 "${pre[@]}" $T/xdllt > out.txt 2>&1 &
  job=$!
  last=-1 same=0
  while kill -0 $job 2>/dev/null; do
    sleep 5
    n=$(wc -c < out.txt)
    if [ "$n" = "$last" ]; then same=$((same + 5)); else same=0; last=$n; fi
    if [ $same -ge "${STALL:-20}" ]; then
      echo "try $try: stalled at $(grep -c WALL out.txt) results"
      for p in $(pgrep -f "mpich-tests/xdllt"); do
        r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep PMI_RANK)
        [ -n "$r" ] || continue
        echo "=== pid $p $r"
        gdb -p $p -batch -ex "thread apply all bt" 2>/dev/null | grep -E "^#|^Thread" | cut -c1-200
      done > stacks.$name.$try.txt
      pkill -9 -f mpich-tests/xdllt
      break
    fi
  done
  wait $job
  echo "try $try: rc=$? $(grep -c WALL out.txt) results"
  [ -f stacks.$name.$try.txt ] && break
done
