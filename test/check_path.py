#!/usr/bin/env python3
"""Which path a test's allreduces took: runs COMMAND with the profile on (COLLX_PROFILE=1,
COLLX_PROFILE_FILE in a temporary directory) and reads the JSON that rank 0 writes when the
communicator is destroyed. Every size bucket with data (bytes_lo > 0) must name only algorithms
in ALGOS (comma-separated; which of them runs may depend on the machine), and there must be such
a bucket; the IPC registration cache must have opened peers' buffers (OPENS = some) or exported
and opened nothing (OPENS = none). With ACROSS (comma-separated), the algorithms that
hierarchical ran between nodes, over all buckets, must be exactly those (COLLX_TUNE_ACROSS in
effect). A test that passes on the wrong path fails here.

    check_path.py ALGOS some|none [ACROSS] -- COMMAND [ARG...]

Exits with COMMAND's status where that is not 0 (77, skipped, included)."""
import json
import os
import subprocess
import sys
import tempfile


def main():
    dash = sys.argv.index("--") if "--" in sys.argv else 0
    if dash not in (3, 4) or len(sys.argv) <= dash + 1 or sys.argv[2] not in ("some", "none"):
        sys.exit(__doc__)
    algos, opens, command = set(sys.argv[1].split(",")), sys.argv[2], sys.argv[dash + 1:]
    across = set(sys.argv[3].split(",")) if dash == 4 else None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "profile.json")
        env = dict(os.environ, COLLX_PROFILE="1", COLLX_PROFILE_FILE=path)
        rc = subprocess.run(command, env=env).returncode
        if rc != 0:
            return rc
        if not os.path.exists(path):
            print("check_path: no profile was written (was a communicator destroyed?)")
            return 1
        with open(path) as f:
            profile = json.load(f)
    seen, seen_across = set(), set()
    for b in profile["buckets"]:
        if b["bytes_lo"] > 0:
            seen.update(b["algorithms"])
            seen_across.update(b["across"])
    caches = profile["caches"]
    failed = []
    if not seen:
        failed.append("no call with data was profiled")
    if seen - algos:
        failed.append(f"ran {sorted(seen - algos)}, outside {sorted(algos)}")
    if across is not None and seen_across != across:
        failed.append(f"ran {sorted(seen_across)} between nodes, not {sorted(across)}")
    if opens == "some" and caches["ipc_opens"] == 0:
        failed.append("the IPC registration cache opened nothing")
    if opens == "none" and (caches["ipc_opens"] != 0 or caches["ipc_exports"] != 0):
        failed.append(f"IPC handles exported or opened: {caches}")
    for f in failed:
        print("check_path: FAILED:", f)
    if not failed:
        between = f" (between nodes {sorted(seen_across)})" if seen_across else ""
        print(f"check_path: every call with data ran {sorted(seen)}{between}; caches {caches}")
    return 1 if failed else 0


sys.exit(main())
