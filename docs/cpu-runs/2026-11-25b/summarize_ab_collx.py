#!/usr/bin/env python3
"""retry-ab-collx.sh's output: per size, each version's libcollx us in every round, and the
medians. Usage: summarize_ab_collx.py FILE"""
import re, statistics, sys
t = {}
v = None
for line in open(sys.argv[1]):
    m = re.match(r"== round (\d+) (\w+)", line)
    if m:
        v = m.group(2)
        continue
    m = re.match(r"^(\d+)\s+([\d.]+)", line)
    if m:
        t.setdefault(int(m.group(1)), {}).setdefault(v, []).append(float(m.group(2)))
print("| size (B) | old (us), median | new (us), median | new/old | rounds old / new |")
print("| ---: | ---: | ---: | ---: | --- |")
for s in sorted(t):
    o, n = t[s]["old"], t[s]["new"]
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"| {s} | {mo:.1f} | {mn:.1f} | {mn / mo:.2f} | "
          f"{' '.join(f'{x:.0f}' for x in o)} / {' '.join(f'{x:.0f}' for x in n)} |")
