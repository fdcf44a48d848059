#!/usr/bin/env python3
"""Medians over rounds of an A/B folder (old.N.txt, new.N.txt from collx_osu --compare-mpi):
per size, each version's libcollx us, MPI us and ratio collx/MPI. Usage: summarize_ab.py DIR"""
import glob, statistics, sys, re
d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(f"{d}/*.txt")):
    v = f.split("/")[-1].split(".")[0]
    for line in open(f):
        m = re.match(r"^(\d+)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s", line)
        if m:
            size = int(m.group(1))
            rows.setdefault(size, {}).setdefault(v, []).append(
                (float(m.group(2)), float(m.group(3)), float(m.group(4))))
print("| size (B) | old: collx / MPI (us), ratio | new: collx / MPI (us), ratio | new/old collx |")
print("| ---: | ---: | ---: | ---: |")
for size in sorted(rows):
    cells = []
    med = {}
    for v in ("old", "new"):
        r = rows[size].get(v, [])
        c = statistics.median(x[0] for x in r); m = statistics.median(x[1] for x in r)
        q = statistics.median(x[2] for x in r)
        med[v] = c
        cells.append(f"{c:.2f} / {m:.2f}, **{q:.2f}** ({' / '.join(f'{x[2]:.2f}' for x in r)})")
    print(f"| {size} | {cells[0]} | {cells[1]} | {med['new'] / med['old']:.2f} |")
