# The baseline that libcollx's device-buffer allreduce is compared with on a GPU machine: what
# users of an MPI that is not CUDA-aware do with gradients in GPU memory. Each call copies the
# device buffer to pinned host memory, runs MPI_Allreduce in place there, and copies the result
# back, then waits for the copy (float32 sum, cudaMalloc'd buffers through PyTorch).
#   mpiexec -n N python3 bench/mpi_staging_baseline.py [max_bytes]
# Timed like bench/cuda_allreduce_bench.cu: per size, the median over 5 repetitions of the mean
# time per call, the slowest rank's. Rank 0 prints the MPI library's version and the table.
import sys
import time

import torch
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, p = comm.rank, comm.size
torch.cuda.set_device(rank % torch.cuda.device_count())
max_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else 64 << 20
if rank == 0:
    print(f"# MPI_Allreduce staged through host memory: {p} ranks, float32 sum, in place")
    print("# " + MPI.Get_library_version().splitlines()[0].rstrip("\x00"))
    print(f"{'# Size':<10} {'staged_mpi_us':>14}")
size = 4
while size <= max_bytes:
    n = size // 4
    dev = torch.rand(n, device="cuda")
    host = torch.empty(n, dtype=torch.float32).pin_memory()
    buf = host.numpy()

    def call():
        host.copy_(dev)
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        dev.copy_(host)
        torch.cuda.synchronize()

    iters = min(200, max(5, (256 << 20) // (size + 1)))
    for _ in range(3):
        call()
    reps = []
    for _ in range(5):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        reps.append(comm.allreduce((time.perf_counter() - t0) / iters * 1e6, op=MPI.MAX))
    if rank == 0:
        print(f"{size:<10} {sorted(reps)[2]:>14.2f}", flush=True)
    size *= 4
