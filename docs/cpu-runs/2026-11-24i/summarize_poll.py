#!/usr/bin/env python3
"""Medians over the rounds of poll-ab.sh, per size: MPI_Iallreduce + an MPI_Test loop through
the preload before (new) and after (yield) collx_test yields, MPICH's own (PMPI, from the
'yield' runs), in us, and the ratio preloaded/MPICH after.  summarize_poll.py poll-ab.txt"""
import re
import statistics
import sys

runs = {"new": [], "yield": []}
cur = None
for line in open(sys.argv[1]):
    m = re.match(r"== (new|yield) \d+", line)
    if m:
        cur = {}
        runs[m.group(1)].append(cur)
        continue
    f = line.split()
    if f and f[0].isdigit():
        assert f[-1] == "Pass", line
        cur[int(f[0])] = (float(f[3]), float(f[5]))  # preloaded MPI, PMPI (MPICH)
print("| size (B) | preloaded, before (us) | preloaded, after (us) | MPICH (us) | after / MPICH |")
print("| ---: | ---: | ---: | ---: | ---: |")
for s in sorted(runs["new"][0]):
    before = statistics.median(r[s][0] for r in runs["new"])
    after = statistics.median(r[s][0] for r in runs["yield"])
    mpich = statistics.median(r[s][1] for r in runs["yield"])
    ratio = statistics.median(r[s][0] / r[s][1] for r in runs["yield"])
    print(f"| {s} | {before:.1f} | {after:.1f} | {mpich:.1f} | **{ratio:.2f}** |")
