#!/usr/bin/env python3
"""Medians over the rounds of poll-inline-ab.txt: per mode and size, libcollx's latency before
(base) and after (new), the MPI library's own in the same runs, and new / MPI (the median of
the per-run ratios)."""
import statistics
import sys
from collections import defaultdict

rows = defaultdict(list)  # (mode, version, size) -> [(ours, mpi)]
mode = version = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "poll-inline-ab.txt"):
    if line.startswith("== "):
        mode, version, _ = line.split()[1:]
        continue
    f = line.split()
    if not f or f[0].startswith("#") or not f[0].isdigit():
        continue
    size = int(f[0])
    if mode == "direct":  # collx_iallreduce + collx_test; MPICH's MPI_Iallreduce + MPI_Test
        rows[(mode, version, size)].append((float(f[1]), float(f[3])))
    else:  # MPI_Iallreduce through the preload; PMPI_Iallreduce (MPICH's own)
        rows[(mode, version, size)].append((float(f[3]), float(f[5])))

med = statistics.median
for m, what in (("direct", "collx_iallreduce + collx_test loop"),
                ("preload", "MPI_Iallreduce + MPI_Test loop, preloaded"),
                ("wait", "MPI_Iallreduce + MPI_Wait, preloaded")):
    print(f"\n{m}: {what} (us)")
    print(f"{'size':>8} {'base':>8} {'new':>8} {'MPICH':>8} {'new/MPICH':>10} {'base/MPICH':>11}")
    for size in sorted({k[2] for k in rows if k[0] == m}):
        b, n = rows[(m, "base", size)], rows[(m, "new", size)]
        mpi = med([x[1] for x in b + n])
        print(f"{size:>8} {med([x[0] for x in b]):>8.2f} {med([x[0] for x in n]):>8.2f} "
              f"{mpi:>8.2f} {med([x[0] / x[1] for x in n]):>10.2f} "
              f"{med([x[0] / x[1] for x in b]):>11.2f}")
