#!/usr/bin/env bash
# One kernel (COLLX_CUDA_FLAGS_MAX=4M) against the defaults (1M: IPC one-shot below 2M, two-shot
# from 2M) at 1.5 - 4 MiB, 2/4/8 ranks on the one GPU under MPS; alternated, two passes.
set -u
u=$(mktemp -d); tar xJf .gpu/bundle.tar.xz -C $u || exit 1
b=$u/gpu/build
export LD_LIBRARY_PATH=$u/gpu/lib UCX_MODULE_DIR=$u/gpu/lib/ucx HYDRA_LAUNCHER=fork
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$?"
L=$OUT/sweep.txt
# correctness of the one kernel up to 4M first
for n in 2 8; do
  COLLX_CUDA_FLAGS_MAX=4M timeout 40 $b/test/cuda_staging_test $n > $OUT/flags4m_test_n$n.txt 2>&1
  echo "flags4m_test_n$n rc=$? $(tail -n 1 $OUT/flags4m_test_n$n.txt)" | tee -a $L
done
for pass in 1 2; do
  for n in 2 4 8; do
    for s in 1572864 2097152 3145728 4194304; do
      for m in 1M 4M; do
        r=$(COLLX_CUDA_FLAGS_MAX=$m timeout 30 $u/gpu/bin/mpiexec.hydra -launcher fork -n $n \
            $b/bench/cuda_mpi_bench $s:$s 2>&1 | tail -n 1)
        echo "pass=$pass n=$n max=$m $r" | tee -a $L
      done
    done
  done
done
echo quit | nvidia-cuda-mps-control
