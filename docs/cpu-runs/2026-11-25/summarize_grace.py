#!/usr/bin/env python3
"""grace-sweep.txt: per grace period and size, the median over the rounds of libcollx's
latency (us) and of its ratio to MPICH's in the same run."""
import statistics
import sys
from collections import defaultdict

lat, ratio = defaultdict(list), defaultdict(list)
g = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "grace-sweep.txt"):
    if line.startswith("== grace"):
        g = int(line.split()[2])
        continue
    f = line.split()
    if f and f[0].isdigit():
        lat[(g, int(f[0]))].append(float(f[1]))
        ratio[(g, int(f[0]))].append(float(f[1]) / float(f[3]))
graces = sorted({k[0] for k in lat})
sizes = sorted({k[1] for k in lat})
print("size  " + "  ".join(f"{g:>16}" for g in graces))
for s in sizes:
    print(f"{s:<6}" + "  ".join(f"{statistics.median(lat[(g, s)]):>7.2f} ({statistics.median(ratio[(g, s)]):>4.2f}x)"
                                for g in graces))
