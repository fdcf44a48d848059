#!/usr/bin/env python3
"""Medians over the rounds of nonblocking.sh: per size, libcollx's iallreduce+wait latency
(old, new), the ratio collx/MPI of each run, and the overlap (%) of each, for one kind of
computation.   summarize.py DIR busy|sleep"""
import glob
import statistics
import sys

d, kind = sys.argv[1], sys.argv[2]


def parse(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if f and f[0].isdigit():
            # size, lat, busbw, mpi lat, ratio, overlap, mpi overlap, algorithm, validation
            rows[int(f[0])] = [float(x) for x in f[1:7]] + [f[7], f[8]]
    return rows


runs = {v: [parse(p) for p in sorted(glob.glob(f"{d}/{v}.{kind}.*.txt"))] for v in ("old", "new")}
med = lambda v, s, i: statistics.median(r[s][i] for r in runs[v])
assert all(r[s][7] == "Pass" for v in runs for r in runs[v] for s in r)
print(f"| size (B) | old (us) | new (us) | MPI (us) | old/MPI | new/MPI | overlap old / new / MPI (%) |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for s in sorted(runs["new"][0]):
    mpi = statistics.median([r[s][2] for v in runs for r in runs[v]])
    print(f"| {s} | {med('old', s, 0):.2f} | {med('new', s, 0):.2f} | {mpi:.2f} "
          f"| {med('old', s, 3):.2f} | **{med('new', s, 3):.2f}** "
          f"| {med('old', s, 4):.0f} / {med('new', s, 4):.0f} / {med('new', s, 5):.0f} |")
