#!/usr/bin/env python3
"""Medians over the rounds of batch.sh (one file, sections "== old|new round N"): per size,
libcollx's batch latency (old, new), MPI's, the ratio collx/MPI of each, and the overlap (%).
summarize.py batch.txt"""
import statistics
import sys

runs = {"old": [], "new": []}
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("== "):
        rows = {}
        runs[f[1]].append(rows)
    elif f and f[0].isdigit():
        # size, lat, busbw, mpi lat, ratio, overlap, mpi overlap, algorithm, validation
        assert f[8] == "Pass", line
        rows[int(f[0])] = [float(x) for x in f[1:7]]
med = lambda v, s, i: statistics.median(r[s][i] for r in runs[v])
print("| size (B) | old (us) | new (us) | MPI (us) | old/MPI | new/MPI | overlap old / new / MPI (%) |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for s in sorted(runs["new"][0]):
    mpi = statistics.median([r[s][2] for v in runs for r in runs[v]])
    print(f"| {s} | {med('old', s, 0):.2f} | {med('new', s, 0):.2f} | {mpi:.2f} "
          f"| {med('old', s, 3):.2f} | **{med('new', s, 3):.2f}** "
          f"| {med('old', s, 4):.0f} / {med('new', s, 4):.0f} / {med('new', s, 5):.0f} |")
