#!/bin/bash
# shm_two_shot forced at 256 KiB - 4 MiB with COLLX_SHM_AREAS 2, 3, 4 (default), 8; three rounds.
b=/work/main/build
for r in 1 2 3; do
  for a in 2 3 4 8; do
    mpiexec -n 2 env COLLX_SHM_AREAS=$a $b/bench/collx_osu -m 262144:4194304 --compare-mpi -c --algo shm_two_shot > areas.$a.$r.txt 2>&1
  done
done
