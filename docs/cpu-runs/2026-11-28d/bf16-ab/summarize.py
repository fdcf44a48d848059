#!/usr/bin/env python3
"""Median libcollx latency per size over the rounds of a tools/ab run without --compare-mpi
(bfloat16 has no MPI counterpart in MPICH 4.0.2): rN-A.txt against rN-B.txt.
  summarize.py [DIR A B]   (default: this folder, 684f951 72477e7)
This folder's run: tools/ab --rounds 4 --out DIR 684f951 72477e7 -- -m 1024:16777216
-T bfloat16 -c; ../avg-ab's: summarize.py ../avg-ab 72477e7 3b53514."""
import glob, os, statistics, sys
here, a_name, b_name = (sys.argv[1:4] if len(sys.argv) == 4 else
                        (os.path.dirname(os.path.abspath(__file__)), '684f951', '72477e7'))
def rows(f):
    d = {}
    for line in open(f):
        x = line.split()
        if x and x[0].isdigit():
            d[int(x[0])] = (float(x[1]), x[-1])
    return d
A = [rows(f) for f in sorted(glob.glob(os.path.join(here, 'r*-A.txt')))]
B = [rows(f) for f in sorted(glob.glob(os.path.join(here, 'r*-B.txt')))]
print(f"| size (B) | {a_name} (us) | {b_name} (us) | ratio |")
print("| ---: | ---: | ---: | ---: |")
for s in sorted(A[0]):
    a = statistics.median(r[s][0] for r in A)
    b = statistics.median(r[s][0] for r in B)
    ok = all(r[s][1] == 'Pass' for r in A + B)
    print(f"| {s} | {a:.2f} | {b:.2f} | {b / a:.2f} |" + ("" if ok else " NOT VALIDATED"))
