#!/usr/bin/env python3
"""Per-test durations of meson-ab.sh's runs: for each test, the median over rounds of base and
new, and the sums; tests whose medians differ by more than 1 s and 20% are listed."""
import glob, json, lzma, statistics, sys
from collections import defaultdict

d = sys.argv[1] if len(sys.argv) > 1 else "."
dur = {"base": defaultdict(list), "new": defaultdict(list)}
for f in sorted(glob.glob(f"{d}/testlog.*.json.xz")):  # meson-ab.sh's logs, xz'ed
    name = f.split(".")[-3]
    for line in lzma.open(f, "rt"):
        r = json.loads(line)
        dur[name][r["name"]].append(r["duration"])
tests = sorted(dur["base"])
print(f"{len(tests)} tests; runs: base {len(dur['base'][tests[0]])}, new {len(dur['new'][tests[0]])}")
tot = {k: sum(statistics.median(v[t]) for t in tests) for k, v in dur.items()}
print(f"sum of per-test medians: base {tot['base']:.1f} s, new {tot['new']:.1f} s "
      f"(new/base {tot['new'] / tot['base']:.3f})")
for t in tests:
    b, n = statistics.median(dur["base"][t]), statistics.median(dur["new"][t])
    if abs(n - b) > 1 and abs(n - b) > 0.2 * b:
        print(f"  {t}: base {b:.2f} s {dur['base'][t]}, new {n:.2f} s {dur['new'][t]}")
