#!/bin/bash
# shm_two_shot (Intel's default below 2 MiB) and the defaults at 256 KiB - 4 MiB with the
# segment chunk at 128K, 256K (default), 512K and 1M, three rounds, the order rotated.
b=/work/main/build
for r in 1 2 3; do
  for c in 128K 256K 512K 1M; do
    mpiexec -n 2 env COLLX_SHM_CHUNK=$c $b/bench/collx_osu -m 262144:4194304 --compare-mpi -c > plain.$c.$r.txt 2>&1
  done
done
