# Session of 2026-11-23 (3): where the one-kernel path stops winning (COLLX_CUDA_FLAGS_MAX).
L=$OUT/logs; mkdir -p $L
B=.gpu/b
tar xJf .gpu/mpich.tar.xz -C /tmp
export LD_LIBRARY_PATH=/tmp/mpich:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/lib/ucx
t() { local f=$1 lim=$2; shift 2; local s=$(date +%s%N); timeout $lim "$@" > $L/$f 2>&1; local rc=$?; echo "$f rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms: $(tail -n 1 $L/$f)"; return $rc; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$?"
for r in 1 2; do for n in 2 4 8; do for m in 64K 16M; do
  t max${m}_r${r}_n$n.txt 60 /tmp/mpich/mpiexec.hydra -launcher fork -n $n -genv COLLX_CUDA_FLAGS_MAX $m $B/bench/cuda_mpi_bench 65536:8388608
done; done; done
echo quit | nvidia-cuda-mps-control
cd $L && tar czf $OUT/logs.tgz . && cd - > /dev/null; rm -rf $L
