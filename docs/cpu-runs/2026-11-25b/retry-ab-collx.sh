#!/usr/bin/env bash
# The store choice's retry spacing, A/B, libcollx alone (no MPI in the run, so that a round is
# short and more rounds catch both phases of the VM): OLD against NEW build, alternated, each
# round after a CPU pair probe (its round trip says the phase). Usage: OLD NEW ROUNDS OUT
set -u
old=$1 new=$2 rounds=$3 out=$4
for i in $(seq 1 "$rounds"); do
  for v in old new; do
    b=$old; [ $v = new ] && b=$new
    echo "== round $i $v $(${b}/bench/cpu_pair_probe | grep -o 'round trip [0-9]* ns')"
    mpiexec -n 2 "$b/bench/collx_osu" -m 262144:4194304 -r 5 | grep -E '^ *[0-9]+ '
  done
done > "$out" 2>&1
