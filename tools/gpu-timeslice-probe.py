# Launch+sync latency of a tiny kernel and of a small device-to-host copy (PyTorch), in one
# process alone, then in 2 and 4 processes at once on one GPU: shows whether the GPU time-slices
# between processes (no MPS: kernels wait for a slice, copies do not) or runs them together
# (MPS). Used for COLLX_CUDA_IPC_MIN_TIMESLICED; outputs in docs/gpu-runs/.
#   python3 tools/gpu-timeslice-probe.py
import os, sys, time, torch
def loop(n=3000):
    x = torch.zeros(16, device='cuda')
    for _ in range(200): x.add_(1); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): x.add_(1); torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6
def copyloop(n=3000):
    x = torch.zeros(16, device='cuda'); h = torch.zeros(16).pin_memory()
    for _ in range(200): h.copy_(x, non_blocking=True); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): h.copy_(x, non_blocking=True); torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6
if __name__ == '__main__':
    import multiprocessing as mp
    mp.set_start_method('spawn')
    for f in (loop, copyloop):
        for n in (1, 2, 4):
            with mp.Pool(n) as p:
                r = p.starmap(f, [()] * n)
            print(f"{f.__name__}: {n} process(es) on one GPU: {max(r):.1f} us per launch+sync (slowest)", flush=True)
