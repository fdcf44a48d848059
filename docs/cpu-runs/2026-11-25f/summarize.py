#!/usr/bin/env python3
"""Medians over the rounds of progress-unsent-ab-10.txt: latency (us) per build and mode."""
import collections, re, statistics, sys
d = collections.defaultdict(list)
cur = None
for l in open(sys.argv[1] if len(sys.argv) > 1 else 'progress-unsent-ab-10.txt'):
    m = re.match(r'== round (\d+): (\w+) (.*)', l)
    if m:
        cur = (m.group(2), m.group(3).strip())
        continue
    f = l.split()
    if f and f[0].isdigit():
        d[(cur, int(f[0]))].append(float(f[1]))
for mode in ['--nonblocking', '--nonblocking --poll']:
    print(mode)
    sizes = sorted({s for (c, s) in d if c[1] == mode})
    for size in sizes:
        b = d[(('base', mode), size)]
        n = d[(('new', mode), size)]
        print(f"{size:6d}  base {statistics.median(b):7.2f} ({min(b):.2f}-{max(b):.2f})"
              f"  new {statistics.median(n):7.2f} ({min(n):.2f}-{max(n):.2f})"
              f"  new/base {statistics.median(n) / statistics.median(b):.2f}")

# Paired: each round's new / base (the two runs are adjacent in time), median over rounds.
rounds = collections.defaultdict(dict)
cur = None
for l in open(sys.argv[1] if len(sys.argv) > 1 else 'progress-unsent-ab-10.txt'):
    m = re.match(r'== round (\d+): (\w+) (.*)', l)
    if m:
        cur = (int(m.group(1)), m.group(2), m.group(3).strip())
        continue
    f = l.split()
    if f and f[0].isdigit():
        rounds[(cur[0], cur[2], int(f[0]))][cur[1]] = float(f[1])
print("paired new/base, median over rounds (range)")
for mode in ['--nonblocking', '--nonblocking --poll']:
    sizes = sorted({k[2] for k in rounds if k[1] == mode})
    out = []
    for size in sizes:
        r = [v['new'] / v['base'] for k, v in rounds.items() if k[1] == mode and k[2] == size]
        out.append(f"{size}:{statistics.median(r):.2f}({min(r):.2f}-{max(r):.2f})")
    print(mode, ' '.join(out))
