#!/usr/bin/env python3
"""Every pmpi_preload_* meson test of an ASan + UBSan build, run by hand with the ASan runtime
first on LD_PRELOAD (meson's own command preloads the instrumented libcollx_mpi.so alone,
which the runtime refuses): each argument naming libcollx_mpi.so gets libasan.so in front.
    run.py BUILD_ASAN > summary.txt"""
import json, os, subprocess, sys, time
build = os.path.abspath(sys.argv[1])
asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                      text=True).stdout.strip()
tests = json.loads(subprocess.run(["meson", "introspect", "--tests", build], capture_output=True,
                                  text=True).stdout)
ok = bad = 0
for t in tests:
    if not t["name"].startswith("pmpi_preload"):
        continue
    cmd = [f"{asan}:{a}" if "libcollx_mpi.so" in a and "libasan" not in a else a for a in t["cmd"]]
    env = dict(os.environ, **t["env"], UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
               ASAN_OPTIONS="detect_leaks=1")
    start = time.time()
    try:
        r = subprocess.run(cmd, cwd=t["workdir"] or build, env=env, capture_output=True, text=True,
                           timeout=3 * t["timeout"])
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", str(e.stdout) + str(e.stderr)
    good = rc == 0 if not t.get("should_fail") else rc != 0
    ok += good
    bad += not good
    last = out.strip().splitlines()[-1] if out.strip() else ""
    print(f"{t['name']}: rc {rc} in {time.time() - start:.0f} s | {last[:150]}", flush=True)
    if not good:
        with open(f"failed.{t['name']}.log", "w") as f:
            f.write(out)
print(f"{ok} passed, {bad} failed")
