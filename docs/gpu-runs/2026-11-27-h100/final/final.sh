#!/usr/bin/env bash
# Last check of 2026-11-27 (under MPS): the new defaults (COLLX_CUDA_FLAGS_MAX 2M) pass the
# device test; small-message latency of 7009d56 (the one kernel as first measured) against
# this build, alternated; 2 MiB at the defaults; cuda_allreduce_bench (IPC column without the
# one kernel, so the fresh-buffer line measures the cache again) up to 4 MiB.
set -u
u=$(mktemp -d); tar xJf .gpu/bundle.tar.xz -C $u || exit 1; tar xJf .gpu/old.tar.xz -C $u || exit 1
new=$u/gpu/build old=$u/old/build
export LD_LIBRARY_PATH=$u/gpu/lib UCX_MODULE_DIR=$u/gpu/lib/ucx HYDRA_LAUNCHER=fork
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$?"
mpx=$u/gpu/bin/mpiexec.hydra
for n in 8 2; do
  timeout 40 $new/test/cuda_staging_test $n > $OUT/default_test_n$n.txt 2>&1
  echo "default_test_n$n rc=$? $(tail -n 1 $OUT/default_test_n$n.txt)"
done
for r in 1 2 3; do
  for n in 4 8; do
    for v in old new; do
      b=$old; [ $v = new ] && b=$new
      timeout 30 $mpx -launcher fork -n $n $b/bench/cuda_mpi_bench 4:65536 > $OUT/ab_${v}_n${n}_r$r.txt 2>&1
      echo "r=$r n=$n $v rc=$? $(awk '/^[0-9]/ {printf "%s:%s ", $1, $2}' $OUT/ab_${v}_n${n}_r$r.txt)"
    done
  done
done
for n in 2 4 8; do
  echo "default 2M n=$n $(timeout 30 $mpx -launcher fork -n $n $new/bench/cuda_mpi_bench 2097152:2097152 2>&1 | tail -n 1)"
done
for n in 2 4 8; do
  timeout 60 $new/bench/cuda_allreduce_bench $n 4194304 > $OUT/allreduce_bench_n$n.txt 2>&1
  echo "allreduce_bench n=$n rc=$? $(tail -n 1 $OUT/allreduce_bench_n$n.txt)"
done
echo quit | nvidia-cuda-mps-control
cd $OUT && tar czf final-logs.tgz *.txt && rm -f ab_*.txt
