# Session of 2026-11-23 (3): GPU-scope fences at the end, fewer stream queries.
L=$OUT/logs; mkdir -p $L
B=.gpu/b
tar xJf .gpu/mpich.tar.xz -C /tmp
export LD_LIBRARY_PATH=/tmp/mpich:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/lib/ucx
t() { local f=$1 lim=$2; shift 2; local s=$(date +%s%N); timeout $lim "$@" > $L/$f 2>&1; local rc=$?; echo "$f rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms: $(tail -n 1 $L/$f)"; return $rc; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$?"
for n in 2 4 8; do t flags_all_mps_n$n.txt 90 env COLLX_CUDA_FLAGS_MAX=32M $B/test/cuda_staging_test $n; done
for r in 1 2 3; do for n in 2 4 8; do
  t bench_r${r}_n$n.txt 60 /tmp/mpich/mpiexec.hydra -launcher fork -n $n $B/bench/cuda_mpi_bench 4:1048576 || tail -20 $L/bench_r${r}_n$n.txt
done; done
t sanitizer_flags_mps.txt 150 env COLLX_CUDA_FLAGS_MAX=32M compute-sanitizer --tool memcheck --target-processes all --error-exitcode 9 $B/test/cuda_staging_test 2
echo quit | nvidia-cuda-mps-control
t default_nomps_n2.txt 90 $B/test/cuda_staging_test 2
cd $L && tar czf $OUT/logs.tgz . && rm -f bench_* && cd - >/dev/null
