#!/usr/bin/env python3
"""Medians over rounds of ab.txt: collx latency (us) and collx/MPI per side and size."""
import re, statistics, sys
side = None
rows = {}
for line in open(sys.argv[1] if len(sys.argv) > 1 else "ab.txt"):
    m = re.match(r"== round (\d+) side (\w)", line)
    if m:
        side = m.group(2)
        continue
    f = line.split()
    if len(f) >= 6 and f[0].isdigit():
        rows.setdefault((int(f[0]), side), []).append((float(f[1]), float(f[3]), float(f[4])))
print("| size (B) | A: collx µs | B: collx µs | B/A | A: collx/MPI | B: collx/MPI | runs |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for size in sorted({s for s, _ in rows}):
    a, b = rows[(size, "A")], rows[(size, "B")]
    med = lambda v, i: statistics.median(x[i] for x in v)
    print(f"| {size} | {med(a,0):.2f} | {med(b,0):.2f} | {med(b,0)/med(a,0):.2f} | "
          f"{med(a,2):.3f} | {med(b,2):.3f} | {len(a)} / {len(b)} |")
