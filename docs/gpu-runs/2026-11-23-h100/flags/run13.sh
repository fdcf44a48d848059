# Session of 2026-11-23 (3): cuda_mpi_bench --direct, bare MPICH and under the PMPI preload.
L=$OUT/logs; mkdir -p $L
B=.gpu/b
tar xJf .gpu/mpich.tar.xz -C /tmp
export LD_LIBRARY_PATH=/tmp/mpich:$PWD/.gpu/lib UCX_MODULE_DIR=$PWD/.gpu/lib/ucx
t() { local f=$1 lim=$2; shift 2; local s=$(date +%s%N); timeout $lim "$@" > $L/$f 2>&1; local rc=$?; echo "$f rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms: $(tail -n 1 $L/$f)"; return $rc; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$?"
t direct_bare_n2.txt 60 /tmp/mpich/mpiexec.hydra -launcher fork -n 2 $B/bench/cuda_mpi_bench 4:1048576 --direct
for n in 2 4 8; do
t direct_preload_n$n.txt 90 /tmp/mpich/mpiexec.hydra -launcher fork -n $n -genv LD_PRELOAD $PWD/$B/lib/libcollx_mpi.so $B/bench/cuda_mpi_bench 4:1048576 --direct
done
echo quit | nvidia-cuda-mps-control
cat $L/direct_bare_n2.txt | tail -15; cat $L/direct_preload_n2.txt $L/direct_preload_n8.txt
