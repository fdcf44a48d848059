#!/usr/bin/env python3
"""Median GiB/s of each kernel over the rounds, per build (r*-A.txt, r*-B.txt, r*-C.txt)."""
import glob, re, statistics
runs = {}
for path in sorted(glob.glob("r*-[ABC].txt")):
    side = path[-5]
    for line in open(path):
        m = re.match(r"(\S+)/(\d+)\s.*bytes_per_second=([\d.]+)G/s", line)
        if m:
            runs.setdefault((m[1], int(m[2])), {}).setdefault(side, []).append(float(m[3]))
print("| kernel | size | A: fcf4eab | B: 7f74192 | C: cf2f7f9 | B / A | C / A |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for (name, size), sides in runs.items():
    a, b, c = (statistics.median(sides[k]) for k in "ABC")
    label = "256 KiB" if size == 262144 else "64 MiB"
    print(f"| {name} | {label} | {a:.1f} | {b:.1f} | {c:.1f} | {b / a:.2f} | {c / a:.2f} |")
