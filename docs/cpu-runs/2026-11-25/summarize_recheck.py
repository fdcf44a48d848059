#!/usr/bin/env python3
"""recheck-ab.txt: per mode and size, the median over the rounds of libcollx's latency before
and after (us), MPICH's own (both versions' runs), and the medians of the per-run ratios."""
import statistics
import sys
from collections import defaultdict

rows = defaultdict(list)
mode = ver = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "recheck-ab.txt"):
    if line.startswith("== "):
        mode, ver, _ = line.split()[1:]
        continue
    f = line.split()
    if not f or not f[0].isdigit():
        continue
    pair = (float(f[1]), float(f[3])) if mode == "direct" else (float(f[3]), float(f[5]))
    rows[(mode, ver, int(f[0]))].append(pair)
med = statistics.median
for m in ("direct", "preload"):
    print(f"\n{m}\n{'size':>6} {'before':>7} {'after':>7} {'MPICH':>7} {'before/MPICH':>13} {'after/MPICH':>12}")
    for s in sorted({k[2] for k in rows if k[0] == m}):
        b, a = rows[(m, "before", s)], rows[(m, "after", s)]
        print(f"{s:>6} {med([x[0] for x in b]):>7.2f} {med([x[0] for x in a]):>7.2f} "
              f"{med([x[1] for x in a + b]):>7.2f} {med([x[0] / x[1] for x in b]):>13.2f} "
              f"{med([x[0] / x[1] for x in a]):>12.2f}")
