"""summarize.py DIR: per size, the medians over the runs of the preload's MPI_Allreduce time
("MPI Avg"), of libcollx's own in the same run over it ("collx/MPI": the interposer's cost)
and of its ratio to MPICH's own in the same run ("MPI/PMPI"), old and new."""
import glob
import statistics
import sys

rows = {}
for path in glob.glob(sys.argv[1] + "/*-*.txt"):
    which = path.rsplit("/", 1)[1].split("-")[0]
    for line in open(path):
        f = line.split()
        if f and f[0].isdigit() and len(f) >= 8:
            rows.setdefault((int(f[0]), which), []).append(tuple(map(float, (f[3], f[4], f[6]))))
print("size  runs   MPI Avg old / new (us)   collx/MPI old / new   MPI/PMPI old / new")
for size in sorted({s for s, _ in rows}):
    o, n = rows[(size, "old")], rows[(size, "new")]
    m = [(statistics.median(r[k] for r in o), statistics.median(r[k] for r in n))
         for k in range(3)]
    print(f"{size:<5} {len(o):>2}/{len(n):<2} {m[0][0]:9.3f} / {m[0][1]:.3f}"
          f" {m[1][0]:15.3f} / {m[1][1]:.3f} {m[2][0]:14.3f} / {m[2][1]:.3f}")
