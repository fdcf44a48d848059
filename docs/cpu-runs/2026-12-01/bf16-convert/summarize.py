#!/usr/bin/env python3
"""Median GB/s of each kernel over the rounds, A against B (r*-A.txt, r*-B.txt)."""
import glob, re, statistics
runs = {}
for path in sorted(glob.glob("r*-[AB].txt")):
    side = path[-5]
    for line in open(path):
        m = re.match(r"(\S+)/(\d+)\s.*bytes_per_second=([\d.]+)G/s", line)
        if m:
            runs.setdefault((m[1], int(m[2])), {}).setdefault(side, []).append(float(m[3]))
print("| kernel | size | A: fcf4eab | B: 7f74192 | B / A |")
print("| --- | ---: | ---: | ---: | ---: |")
for (name, size), sides in runs.items():
    a, b = statistics.median(sides["A"]), statistics.median(sides["B"])
    label = "256 KiB" if size == 262144 else "64 MiB"
    print(f"| {name} | {label} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
