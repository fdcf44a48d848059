#!/usr/bin/env python3
"""COLLX_PROFILE: run profile_test on N ranks with the profile on; the JSON written by rank 0
must parse, and its call counts per bucket must equal the calls profile_test made (bucket b:
b + 1 calls), with sane times, byte totals and algorithm names."""
import json
import os
import subprocess
import sys
import tempfile

mpiexec, ranks, program = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "profile.json")
    env = dict(os.environ, COLLX_PROFILE="1", COLLX_PROFILE_FILE=path)
    run = subprocess.run([mpiexec, "-n", str(ranks), program], env=env, capture_output=True,
                         text=True, timeout=300)
    print(run.stderr[-3000:])
    if run.returncode != 0:
        sys.exit(f"profile_test failed with {run.returncode}")
    profile = json.load(open(path))

failed = 0
def check(ok, what):
    global failed
    if not ok:
        failed += 1
        print("FAIL:", what)

check(profile["ranks"] == ranks, "ranks")
buckets = {b["bytes_lo"]: b for b in profile["buckets"]}
for b in range(21):
    lo = 0 if b == 0 else 1 << (b - 1)
    got = buckets.get(lo)
    check(got is not None, f"bucket {lo} missing")
    if got is None:
        continue
    check(got["calls"] == b + 1, f"bucket {lo}: {got['calls']} calls, expected {b + 1}")
    check(got["bytes"] == (b + 1) * ((1 << b) - 1), f"bucket {lo}: bytes {got['bytes']}")
    check(0 <= got["min_ns"] <= got["mean_ns"] <= got["max_ns"], f"bucket {lo}: times")
    check(len(got["algorithms"]) >= 1 and all(a for a in got["algorithms"]), f"bucket {lo}: algorithms")
    check(got["across"] == [], f"bucket {lo}: one node, but between nodes {got['across']}")
check(len(buckets) == 21, f"{len(buckets)} buckets, expected 21")
caches = profile.get("caches", {})
keys = ["pointer_hits", "pointer_misses", "ipc_hits", "ipc_opens", "ipc_closes", "ipc_exports"]
check(all(isinstance(caches.get(k), int) and caches[k] >= 0 for k in keys), f"caches: {caches}")
# Host buffers: nothing for the IPC cache to do.
check(all(caches.get(k) == 0 for k in keys[2:]), f"IPC counters on host buffers: {caches}")
check("# caches (all ranks)" in run.stderr, "no cache line in the table")
check("libcollx allreduce profile" in run.stderr, "rank 0 printed no table")

# A profile file that cannot be written: rank 0's destroy says so (after printing the table),
# the communicator is freed all the same (finalize succeeds), and the other ranks are unaffected.
missing = "/nonexistent-collx-dir/profile.json"
env = dict(os.environ, COLLX_PROFILE="1", COLLX_PROFILE_FILE=missing)
run = subprocess.run([mpiexec, "-n", str(ranks), program], env=env, capture_output=True,
                     text=True, timeout=300)
check(run.returncode != 0, "an unwritable COLLX_PROFILE_FILE went unreported")
check(f"destroy: COLLX_PROFILE_FILE={missing}: cannot write: No such file or directory"
      in run.stderr, "destroy's error: " + run.stderr[-2000:])
check(run.stderr.count("profile_test:") == 1, "errors besides rank 0's destroy: " + run.stderr[-2000:])
check("libcollx allreduce profile" in run.stderr, "no table before the failed write")
print(f"{21 * 6 + 9 - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
