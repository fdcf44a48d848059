#!/usr/bin/env python3
# Per size: libcollx's time with COLLX_SHM_AREAS=2 over its time with 4, in the two runs of
# each round (run back to back), and the median over the rounds; >1: 4 areas are faster.
import glob, re, statistics
def parse(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if f and f[0].isdigit() and 'Pass' in line:
            rows[int(f[0])] = float(f[1])
    return rows
rounds = sorted(int(re.search(r'\.(\d+)\.txt', p).group(1)) for p in glob.glob('areas-2.*.txt'))
a2 = {i: parse(f'areas-2.{i}.txt') for i in rounds}
a4 = {i: parse(f'areas-4.{i}.txt') for i in rounds}
print('| size (B) | time with 2 areas / time with 4, per round | median |')
print('| ---: | --- | ---: |')
for s in sorted(a2[rounds[0]]):
    q = [a2[i][s] / a4[i][s] for i in rounds]
    print(f'| {s} | ' + ' / '.join(f'{x:.2f}' for x in q) + f' | **{statistics.median(q):.2f}** |')
