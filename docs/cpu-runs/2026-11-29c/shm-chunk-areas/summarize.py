#!/usr/bin/env python3
"""Median over the three rounds of libcollx's time and of the ratio collx/MPI, per setting and
size, from plain.CHUNK.R.txt (defaults, COLLX_SHM_CHUNK varied) and areas.N.R.txt
(shm_two_shot forced, COLLX_SHM_AREAS varied)."""
import glob, re, statistics
sizes = [262144, 524288, 1048576, 2097152, 4194304]
def table(prefix, values):
    print(f"| {prefix} | " + " | ".join(f"{s >> 10} KiB" for s in sizes) + " |")
    print("| --- |" + " ---: |" * len(sizes))
    for v in values:
        cells = []
        for s in sizes:
            t, q = [], []
            for f in sorted(glob.glob(f"{prefix}.{v}.*.txt")):
                for line in open(f):
                    w = line.split()
                    if w and w[0] == str(s):
                        t.append(float(w[1])); q.append(float(w[4]))
            cells.append(f"{statistics.median(t):.0f} µs, {statistics.median(q):.2f}")
        print(f"| {v} | " + " | ".join(cells) + " |")
table("plain", ["128K", "256K", "512K", "1M"])
print()
table("areas", ["2", "3", "4", "8"])
