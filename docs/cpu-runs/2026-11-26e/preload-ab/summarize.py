#!/usr/bin/env python3
"""Medians over the rounds of preload-ab.sh in the VM's third phase (the probe's round trip
under 150 ns; the other rounds are counted and left out), per mode, preload (old, new) and
size: the interposed call's latency ("MPI" column under the preload) and the interposer's
cost (that latency less libcollx called directly in the same run), in us.
summarize.py preload-ab-24.txt"""
import re
import statistics
import sys

runs = {}  # (mode, version) -> list of {size: (mpi, cost)}
cur = None
keep = True
left_out = []
for line in open(sys.argv[1]):
    m = re.search(r"round trip (\d+) ns", line)
    if m:
        keep = int(m.group(1)) < 150
        if not keep:
            left_out.append(int(m.group(1)))
        continue
    m = re.match(r"== (blocking|nonblocking) (old|new) \d+", line)
    if m:
        cur = {}
        if keep:
            runs.setdefault((m.group(1), m.group(2)), []).append(cur)
        continue
    f = line.split()
    if f and f[0].isdigit():
        assert f[-1] == "Pass", line
        direct, mpi = float(f[1]), float(f[3])
        cur[int(f[0])] = (mpi, mpi - direct)
print(f"rounds kept: {len(runs[('blocking', 'old')])}; left out (far phase, round trip ns): {left_out}")
for mode in ("blocking", "nonblocking"):
    print(f"\n{mode}: interposed latency, old -> new (us); interposer cost, old -> new (us)")
    print("| size (B) | latency old | latency new | cost old | cost new |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    old, new = runs[(mode, "old")], runs[(mode, "new")]
    for s in sorted(old[0]):
        med = lambda rs, i: statistics.median(r[s][i] for r in rs)
        print(f"| {s} | {med(old, 0):.2f} | {med(new, 0):.2f} | {med(old, 1):.2f} | {med(new, 1):.2f} |")
