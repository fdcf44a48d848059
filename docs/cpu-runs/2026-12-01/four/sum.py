#!/usr/bin/env python3
"""Per run: mean latency x timed iterations summed over the sizes (100 iterations up to
8 KiB, 20 above, as run.sh asks), for libcollx and MPICH, their ratio, and the wall clock."""
import glob, os
here = os.path.dirname(os.path.abspath(__file__))
print("| run | libcollx | MPICH | ratio | whole run, wall | sizes validated |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for f in sorted(glob.glob(os.path.join(here, 'four.*.txt'))):
    k = f.split('.')[-2]
    c = m = 0.0
    ok = n = 0
    for line in open(f):
        x = line.split()
        if not x or not x[0].isdigit():
            continue
        it = 100 if int(x[0]) <= 8192 else 20
        c += float(x[1]) * it * 1e-6
        m += float(x[3]) * it * 1e-6
        n += 1
        ok += x[-1] == 'Pass'
    wall = open(os.path.join(here, f'wall.{k}.txt')).read().split()[1]
    print(f"| {k} | {c:.3f} s | {m:.1f} s | {c / m:.3f} | {wall} s | {ok} of {n} |")
