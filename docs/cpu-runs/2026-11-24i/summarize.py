#!/usr/bin/env python3
"""Medians over the rounds of preload-ab.sh, per mode (blocking, nonblocking), preload (old,
new) and size: the interposed call's latency ("MPI" column under the preload) and the
interposer's cost (that latency less libcollx called directly in the same run), in us.
summarize.py preload-ab.txt"""
import re
import statistics
import sys

runs = {}  # (mode, version) -> list of {size: (mpi, cost)}
cur = None
for line in open(sys.argv[1]):
    m = re.match(r"== (\w+) (old|new) \d+", line)
    if m:
        cur = {}
        runs.setdefault((m.group(1), m.group(2)), []).append(cur)
        continue
    f = line.split()
    if f and f[0].isdigit():
        assert f[-1] == "Pass", line
        direct, mpi = float(f[1]), float(f[3])
        cur[int(f[0])] = (mpi, mpi - direct)
for mode in ("blocking", "nonblocking"):
    print(f"\n{mode}: interposed latency, old -> new (us); interposer cost, old -> new (us)")
    print("| size (B) | latency old | latency new | cost old | cost new |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    old, new = runs[(mode, "old")], runs[(mode, "new")]
    for s in sorted(old[0]):
        med = lambda rs, i: statistics.median(r[s][i] for r in rs)
        print(f"| {s} | {med(old, 0):.2f} | {med(new, 0):.2f} | {med(old, 1):.2f} | {med(new, 1):.2f} |")
