#!/usr/bin/env python3
"""Runs collx_tune and checks its output: every algorithm of the table is either measured
(a column) or listed as not here with the library's reason; the ones named on the command
line are measured; every row's choice is what the printed COLLX_TUNE picks for that size
(re-derived here from the ranges); the program validated every result and exited 0. With
--across among collx_tune's arguments the table is COLLX_TUNE_ACROSS, and every row appears
once (printed by one rank of all the groups).

  check_tune.py MEASURED[,MEASURED...] -- mpiexec ARGS... collx_tune ARGS...
"""
import subprocess
import sys

ALGOS = ["recursive_doubling", "rabenseifner", "ring", "shm_one_shot", "shm_two_shot",
         "shm_cma", "hierarchical"]


def size_of(s):
    if s == "inf":
        return float("inf")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1], 1)
    return int(s[:-1] if mult != 1 else s) * mult


def pick(tune, size):
    for token in tune.split(","):
        bounds, algo = token.split(":")
        lo, hi = bounds.split("-")
        if size_of(lo) <= size < size_of(hi):
            return algo
    return None


measured_needed = sys.argv[1].split(",")
cmd = sys.argv[sys.argv.index("--") + 1:]
run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
print(run.stdout, end="")
print(run.stderr, end="", file=sys.stderr)
lines = run.stdout.splitlines()
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what)


check(run.returncode == 0, f"collx_tune exited {run.returncode}")
header = next((l for l in lines if l.startswith("# Size")), "")
columns = header.split()[3:-3] if header else []  # after "# Size current", before the picks
not_here = [l.split()[3] for l in lines if l.startswith("# not here: ")]
for algo in ALGOS:
    check((algo in columns) != (algo in not_here), f"{algo}: measured or not here, not both")
for algo in measured_needed:
    check(algo in columns, f"{algo} measured")
first = next((l for l in lines if l.startswith("# collx_tune")), "")
check(("every input rewritten before each call" in first) == ("--rewrite" in cmd),
      "the header says whether inputs are rewritten")
var = "COLLX_TUNE_ACROSS=" if "--across" in cmd else "COLLX_TUNE="
tune = next((l[len(var):] for l in lines if l.startswith(var)), "")
check(tune != "", f"a {var} line")
rows = [l.split() for l in lines if l and l[0].isdigit()]
check(len(rows) > 0, "rows")
check(len({r[0] for r in rows}) == len(rows), "each size in one row")
for row in rows:
    check(len(row) == 1 + 1 + len(columns) + 2, f"row {row[0]}: one time per column")
    check(row[-1] in ALGOS and pick(tune, int(row[0])) == row[-1],
          f"row {row[0]}: the table picks its choice {row[-1]}")
check(any("every result validated" in l for l in lines), "validated and applied")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
