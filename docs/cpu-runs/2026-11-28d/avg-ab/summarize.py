#!/usr/bin/env python3
"""Median libcollx latency per size over the rounds of a tools/ab run without --compare-mpi
(bfloat16 has no MPI counterpart in MPICH 4.0.2): rN-A.txt against rN-B.txt in this folder.
Run: tools/ab --rounds 3 --out DIR 72477e7 3b53514 -- -m 1024:16777216 -T bfloat16 --op avg -c"""
import glob, os, statistics
here = os.path.dirname(os.path.abspath(__file__))
def rows(f):
    d = {}
    for line in open(f):
        x = line.split()
        if x and x[0].isdigit():
            d[int(x[0])] = (float(x[1]), x[-1])
    return d
A = [rows(f) for f in sorted(glob.glob(os.path.join(here, 'r*-A.txt')))]
B = [rows(f) for f in sorted(glob.glob(os.path.join(here, 'r*-B.txt')))]
print("| size (B) | 72477e7 (us) | 3b53514 (us) | ratio |")
print("| ---: | ---: | ---: | ---: |")
for s in sorted(A[0]):
    a = statistics.median(r[s][0] for r in A)
    b = statistics.median(r[s][0] for r in B)
    ok = all(r[s][1] == 'Pass' for r in A + B)
    print(f"| {s} | {a:.2f} | {b:.2f} | {b / a:.2f} |" + ("" if ok else " NOT VALIDATED"))
