#!/usr/bin/env python3
"""Per size: the median ratio over all runs, and over the runs where the MPI library was in
its usual mode at that size (within 1.4x of its fastest run; see docs/PERFORMANCE.md on
MPICH's slow mode). Usage: usual-mode.py run.1.txt ... (collx_osu outputs: --compare-mpi,
ratio collx/MPI; or --compare-pmpi, ratio of MPI_Allreduce through the preload over PMPI)."""
import statistics, sys
runs = []
for p in sys.argv[1:]:
    d = {}
    for line in open(p):
        f = line.split()
        if len(f) < 6 or not f[0].isdigit():
            continue
        pmpi = f[6].replace(".", "", 1).isdigit()  # --compare-pmpi rows have a 7th number
        d[int(f[0])] = (float(f[5]), float(f[6])) if pmpi else (float(f[3]), float(f[4]))
    runs.append(d)
print("| size (B) | ratio, all runs | ratio, MPI usual | usual runs |")
print("| ---: | ---: | ---: | ---: |")
for s in sorted(set.intersection(*(set(r) for r in runs))):
    fastest = min(r[s][0] for r in runs)
    usual = [r[s][1] for r in runs if r[s][0] < 1.4 * fastest]
    print(f"| {s} | {statistics.median(r[s][1] for r in runs):.2f} | "
          f"{statistics.median(usual):.2f} | {len(usual)} of {len(runs)} |")
