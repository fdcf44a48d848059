#!/usr/bin/env python3
"""Median over three rounds of the ratio collx/MPI per algorithm and size, plain and with
--rewrite, from small*.txt (4 - 64 KiB) and forced*.txt (64 KiB - 4 MiB)."""
import glob, statistics
def med(prefix, algo, size):
    q = []
    for f in glob.glob(f"{prefix}.{algo}.*.txt"):
        for line in open(f):
            w = line.split()
            if w and w[0] == str(size):
                q.append(float(w[4]))
    return f"{statistics.median(q):.2f}" if q else ""
small = [4096, 8192, 16384, 32768, 65536]
large = [131072, 262144, 524288, 1048576, 2097152, 4194304]
def name(s):
    return f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"
print("| algorithm | " + " | ".join(name(s) for s in small + large) + " |")
print("| --- |" + " ---: |" * (len(small) + len(large)))
for mode, sp, lp in (("", "small", "forced"), (", `--rewrite`", "smallrw", "forcedrw")):
    for a in ("default", "shm_one_shot", "shm_two_shot", "shm_cma", "recursive_doubling", "rd_nocma"):
        cells = [med(sp, a, s) for s in small] + [med(lp, a, s) for s in large]
        if any(cells):
            print(f"| {a}{mode} | " + " | ".join(cells) + " |")
