#!/bin/bash
# What produced these files (2026-11-29, model 207 Xeon, commit fe6ba04's build, nothing else
# running), three rounds each:
#   forced.ALGO.R.txt / forcedrw.ALGO.R.txt: 64 KiB - 4 MiB with the algorithm forced, plain and
#     with --rewrite (every rank writes its input again before each call);
#   small.ALGO.R.txt / smallrw.ALGO.R.txt: 4 - 64 KiB, the same, plus the defaults ("default")
#     and, with --rewrite, recursive doubling without cross-memory attach ("rd_nocma",
#     COLLX_CMA_MIN=1G).
b=${1:-build}
for r in 1 2 3; do
  for a in shm_one_shot shm_two_shot shm_cma; do
    mpiexec -n 2 $b/bench/collx_osu -m 65536:4194304 --compare-mpi -c --algo $a > forced.$a.$r.txt 2>&1
    mpiexec -n 2 $b/bench/collx_osu -m 65536:4194304 --compare-mpi -c --algo $a --rewrite \
      > forcedrw.$a.$r.txt 2>&1
  done
done
for r in 1 2 3; do
  for a in shm_one_shot shm_two_shot recursive_doubling default; do
    opt="--algo $a"; [ $a = default ] && opt=""
    mpiexec -n 2 $b/bench/collx_osu -m 4096:65536 --compare-mpi -c $opt > small.$a.$r.txt 2>&1
  done
done
for r in 1 2 3; do
  for a in shm_one_shot shm_two_shot recursive_doubling rd_nocma default; do
    case $a in default) opt="";; rd_nocma) opt="--algo recursive_doubling";; *) opt="--algo $a";; esac
    e=""; [ $a = rd_nocma ] && e="COLLX_CMA_MIN=1G"
    mpiexec -n 2 env $e $b/bench/collx_osu -m 4096:65536 --compare-mpi -c --rewrite $opt \
      > smallrw.$a.$r.txt 2>&1
  done
done
