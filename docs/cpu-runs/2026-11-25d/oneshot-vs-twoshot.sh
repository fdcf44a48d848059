#!/usr/bin/env bash
# The one-shot against the two-shot at 256 KiB - 4 MiB, forced with --algo, MPICH timed in the
# same runs, alternated, 2 rounds, each after the CPU pair probe's line (which tells the phase).
# Run from the repository root; raw output: oneshot-vs-twoshot.txt.
for r in 1 2; do
  for a in shm_two_shot shm_one_shot; do
    echo "== $a"
    build/bench/cpu_pair_probe 2>&1 | tail -1
    mpiexec -n 2 build/bench/collx_osu -m 262144:4194304 --algo $a --compare-mpi -I 200 2>&1 | grep -v "^#"
  done
done
