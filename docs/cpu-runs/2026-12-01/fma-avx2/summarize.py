#!/usr/bin/env python3
"""Median GiB/s per kernel over the rounds, A against B, with each side's range."""
import glob, re, statistics
runs = {}
for path in sorted(glob.glob("r*-[AB].txt")):
    for line in open(path):
        m = re.match(r"(\S+)/(\d+)\s.*bytes_per_second=([\d.]+)G/s", line)
        if m:
            runs.setdefault(m[1], {}).setdefault(path[-5], []).append(float(m[3]))
print("| kernel, 256 KiB | A | B | B / A | A's range | B's range |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name, v in runs.items():
    a, b = statistics.median(v["A"]), statistics.median(v["B"])
    print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f} | {min(v['A']):.0f} – {max(v['A']):.0f}"
          f" | {min(v['B']):.0f} – {max(v['B']):.0f} |")
