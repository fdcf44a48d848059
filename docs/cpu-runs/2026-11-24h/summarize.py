#!/usr/bin/env python3
"""Medians over the runs of preload-nonblocking.sh: per size, libcollx called directly, the
interposed MPI_Iallreduce ("MPI" column under the preload) and MPICH (PMPI), in microseconds,
and the ratio interposed/MPICH (each run's own ratio, then the median).
summarize.py single-*.txt   or   summarize.py batch8-*.txt"""
import statistics
import sys

runs = []
for name in sys.argv[1:]:
    rows = {}
    for line in open(name):
        f = line.split()
        if f and f[0].isdigit():
            # size, lat, busbw, mpi lat, collx/mpi, pmpi lat, mpi/pmpi, overlap, mpi overlap,
            # algorithm, validation
            assert f[10] == "Pass", line
            rows[int(f[0])] = [float(x) for x in f[1:9]]
    runs.append(rows)
med = lambda s, i: statistics.median(r[s][i] for r in runs)
print("| size (B) | libcollx direct (us) | MPI_Iallreduce, preloaded (us) | MPICH (us) | preloaded / MPICH |")
print("| ---: | ---: | ---: | ---: | ---: |")
for s in sorted(runs[0]):
    print(f"| {s} | {med(s, 0):.2f} | {med(s, 2):.2f} | {med(s, 4):.2f} | **{med(s, 5):.2f}** |")
