#!/usr/bin/env python3
"""Which path a test's allreduces took: runs COMMAND with the profile on (COLLX_PROFILE=1,
COLLX_PROFILE_FILE in a temporary directory) and reads the JSON that rank 0 writes when the
communicator is destroyed. Every size bucket with data (bytes_lo > 0) must name only algorithms
in ALGOS (comma-separated; which of them runs may depend on the machine), and there must be such
a bucket; the IPC registration cache must have opened peers' buffers (OPENS = some) or exported
and opened nothing (OPENS = none). A test that passes on the wrong path fails here.

    check_path.py ALGOS some|none -- COMMAND [ARG...]

Exits with COMMAND's status where that is not 0 (77, skipped, included)."""
import json
import os
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--" or sys.argv[2] not in ("some", "none"):
        sys.exit(__doc__)
    algos, opens, command = set(sys.argv[1].split(",")), sys.argv[2], sys.argv[4:]
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
    seen = set()
    for b in profile["buckets"]:
        if b["bytes_lo"] > 0:
            seen.update(b["algorithms"])
    caches = profile["caches"]
    failed = []
    if not seen:
        failed.append("no call with data was profiled")
    if seen - algos:
        failed.append(f"ran {sorted(seen - algos)}, outside {sorted(algos)}")
    if opens == "some" and caches["ipc_opens"] == 0:
        failed.append("the IPC registration cache opened nothing")
    if opens == "none" and (caches["ipc_opens"] != 0 or caches["ipc_exports"] != 0):
        failed.append(f"IPC handles exported or opened: {caches}")
    for f in failed:
        print("check_path: FAILED:", f)
    if not failed:
        print(f"check_path: every call with data ran {sorted(seen)}; caches {caches}")
    return 1 if failed else 0


sys.exit(main())
