#!/usr/bin/env python3
# Per EXP_GEN (or COLLX_SHM_AREAS: ../areas/focus.sh) and size: libcollx's time and the ratio
# to MPI_Allreduce of the same run, as medians over the rounds; then, per value, the median
# over rounds of its time over the time with 4 in the same round (above 1: 4 is faster); then
# the probe's rewrite rate (256 KiB) of each run.
import re, statistics, sys
from collections import defaultdict
runs = []  # (gen, rewrite, {size: (collx_us, ratio)})
cur = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else 'rotation.txt'):
    m = re.match(r'=== round (\d+) (?:EXP_GEN|COLLX_SHM_AREAS)=(\d+)', line)
    if m:
        cur = [int(m.group(2)), None, {}]
        runs.append(cur)
        continue
    m = re.search(r'256 KiB [\d.]+ / ([\d.]+)$', line.strip())
    if m and line.startswith('#'):
        cur[1] = float(m.group(1))
        continue
    m = re.match(r'\s*(\d+)\s+([\d.]+)\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+shm_two_shot\s+Pass', line)
    if m:
        cur[2][int(m.group(1))] = (float(m.group(2)), float(m.group(4)))
gens = sorted({r[0] for r in runs})
sizes = sorted({s for r in runs for s in r[2]})
print('| areas (EXP_GEN or COLLX_SHM_AREAS) | runs | ' + ' | '.join(f'{s >> 10} KiB collx us / ratio' for s in sizes) + ' |')
print('| ---: | ---: | ' + ' | '.join('---:' for _ in sizes) + ' |')
for g in gens:
    rs = [r for r in runs if r[0] == g]
    cells = []
    for s in sizes:
        t = statistics.median(r[2][s][0] for r in rs)
        q = statistics.median(r[2][s][1] for r in rs)
        cells.append(f'{t:.1f} / {q:.2f}')
    print(f'| {g} | {len(rs)} | ' + ' | '.join(cells) + ' |')
if 4 in gens:
    print()
    print('| value | ' + ' | '.join(f'{s >> 10} KiB: time / time with 4' for s in sizes) + ' |')
    print('| ---: | ' + ' | '.join('---:' for _ in sizes) + ' |')
    n = len(gens)
    rounds = [runs[i:i + n] for i in range(0, len(runs), n)]
    for g in gens:
        if g == 4:
            continue
        cells = []
        for s in sizes:
            q = [next(r for r in rd if r[0] == g)[2][s][0] / next(r for r in rd if r[0] == 4)[2][s][0]
                 for rd in rounds]
            cells.append(f'{statistics.median(q):.2f}')
        print(f'| {g} | ' + ' | '.join(cells) + ' |')
print()
print('Per run (round, EXP_GEN, probe rewrite GB/s at 256 KiB, collx us at 1 MiB, ratio at 1 MiB):')
for i, r in enumerate(runs):
    print(f'  {i // len(gens) + 1:2d} {r[0]:3d} {r[1]!s:>5} {r[2][1 << 20][0]:8.1f} {r[2][1 << 20][1]:.2f}')
