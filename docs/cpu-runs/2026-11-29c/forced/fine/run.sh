#!/bin/bash
# shm_one_shot against shm_two_shot forced, 2 ranks, at 16 - 64 KiB in 8 KiB steps, plain and
# with --rewrite, three rounds, the two algorithms alternated.
b=${1:-build}
for r in 1 2 3; do
  for mode in plain rewrite; do
    opt=""; [ $mode = rewrite ] && opt=--rewrite
    for a in shm_one_shot shm_two_shot; do
      for s in 16384 24576 32768 40960 49152 57344 65536; do
        mpiexec -n 2 $b/bench/collx_osu -m $s:$s --compare-mpi -c --algo $a $opt
      done > fine.$a.$mode.$r.txt 2>&1
    done
  done
done
