#!/usr/bin/env python3
"""tools/median-table on made-up collx_osu outputs of each kind: the medians, the ratios, and
the refusal to compare outputs of different kinds; --usual-mode; outputs that begin with a
build's output (as tools/run-benchmark's first run does).
    check_median_table.py TOOLS/median-table"""
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]
HEAD_ALONE = "# Size      Avg Latency(us)  BusBW(GB/s)  Algorithm            Validation\n"
HEAD_MPI = ("# Size      Avg Latency(us)  BusBW(GB/s)    MPI Avg(us)  collx/MPI  Algorithm"
            "            Validation\n")


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write("# cpu pair probe: made up\n" + text)
    return path


def run(*args, ok=True):
    r = subprocess.run([sys.executable, tool, *args], capture_output=True, text=True)
    if (r.returncode == 0) != ok:
        sys.exit(f"median-table {args}: rc {r.returncode}, stderr {r.stderr!r}")
    return r.stdout + r.stderr


failures = []


def expect(out, line):
    if line not in out.splitlines():
        failures.append(f"missing {line!r} in:\n{out}")


with tempfile.TemporaryDirectory() as d:
    # Without MPI: A's medians 2.00 and 10.00, B's 1.00 and 20.00.
    a = [write(d, f"a{i}", HEAD_ALONE + f"1024 {x} 1.0 ring Pass\n4096 {y} 1.0 ring Pass\n")
         for i, (x, y) in enumerate([(2, 9), (3, 10), (1, 11)])]
    b = [write(d, f"b{i}", HEAD_ALONE + f"1024 {x} 1.0 ring Pass\n4096 {y} 1.0 ring Pass\n")
         for i, (x, y) in enumerate([(1, 20), (1, 30), (5, 19)])]
    out = run(*a, "--vs", *b)
    expect(out, "| 1024 | 2.00 | 1.00 | 0.50 |")
    expect(out, "| 4096 | 10.00 | 20.00 | 2.00 |")
    expect(run(*a), "| 1024 | 2.00 | 1.00 | ring |")
    # Against MPI: the median of the per-run ratios, not the ratio of the medians.
    m = [write(d, f"m{i}", HEAD_MPI + f"1024 {x} 1.0 {y} {x / y:.3f} ring Pass\n")
         for i, (x, y) in enumerate([(1, 4), (2, 4), (3, 2)])]
    expect(run(*m), "| 1024 | 2.00 | 4.00 | **0.50** (0.25 / 0.50 / 1.50) | 1.00 | ring |")
    expect(run(*m, "--vs", *m), "| 1024 | 2.00 | 2.00 | 4.00 | 4.00 | 0.50 | 0.50 |")
    # Outputs of different kinds are not compared.
    run(*a, "--vs", *m, ok=False)
    run(a[0], m[0], ok=False)
    # A build's output before the table, with a line that starts with a number (gfortran's
    # warnings quote the source line); MPI's 10 us run is outside its usual mode (over 1.4x
    # its fastest, 4 us): the ratios 0.2, 0.4 and 0.1 give 0.20 over all, 0.30 over the usual.
    build = "   55 |   call MPI_Allreduce(MPI_IN_PLACE, iv, n, MPI_INTEGER, MPI_SUM, x, ierr)\n"
    u = [write(d, f"u{i}", build + HEAD_MPI + f"1024 {x} 1.0 {y} {x / y:.3f} ring Pass\n")
         for i, (x, y) in enumerate([(0.8, 4), (1.6, 4), (1, 10)])]
    expect(run("--usual-mode", *u), "| 1024 | 0.20 | 0.30 | 2 of 3 |")
    run("--usual-mode", *a, ok=False)  # (outputs without MPI have no MPI mode)
    expect(run(*u), "| 1024 | 1.00 | 4.00 | **0.20** (0.20 / 0.40 / 0.10) | 1.00 | ring |")

if failures:
    sys.exit("\n".join(failures))
print("median-table: all checks passed")
