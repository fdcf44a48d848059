#!/usr/bin/env python3
"""retry-ab-phase.sh's output, split by phase: a round is "far" where forced ordinary stores
took over twice forced streaming at 1 MiB (a retry of them is costly), else "near". Per phase
and size: the medians of OLD and NEW (libcollx us) and of the forced kinds at 1 MiB.
Usage: summarize_ab_phase.py FILE"""
import re, statistics, sys
rounds = {}
r = v = None
for line in open(sys.argv[1]):
    m = re.match(r"== round (\d+) (\S+)", line)
    if m:
        r, v = int(m.group(1)), m.group(2)
        continue
    m = re.match(r"^(\d+)\s+([\d.]+)", line)
    if m:
        rounds.setdefault(r, {}).setdefault(v, {})[int(m.group(1))] = float(m.group(2))
mib = 1 << 20
for phase in ("far", "near"):
    sel = [x for x in rounds.values() if "forced-cached" in x and
           (x["forced-cached"][mib] > 2 * x["forced-streaming"][mib]) == (phase == "far")]
    if not sel:
        continue
    fs = statistics.median(x["forced-streaming"][mib] for x in sel)
    fc = statistics.median(x["forced-cached"][mib] for x in sel)
    print(f"\n{phase} phase: {len(sel)} rounds; 1 MiB forced streaming {fs:.1f} us, "
          f"forced ordinary stores {fc:.1f} us\n")
    print("| size (B) | old (us) | new (us) | new/old |")
    print("| ---: | ---: | ---: | ---: |")
    for s in sorted(sel[0]["old"]):
        o = statistics.median(x["old"][s] for x in sel)
        n = statistics.median(x["new"][s] for x in sel)
        print(f"| {s} | {o:.1f} | {n:.1f} | {n / o:.2f} |")
