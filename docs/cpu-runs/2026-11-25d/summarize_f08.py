#!/usr/bin/env python3
"""Medians of f08-wait-ab.txt per (probe, preload): µs per MPI_Iallreduce + MPI_Wait of one
integer, each run's first repetition (warm-up) left out."""
import collections
import re
import sys

runs = collections.defaultdict(list)
key, first = None, False
for line in open(sys.argv[1] if len(sys.argv) > 1 else 'f08-wait-ab.txt'):
    m = re.match(r'== round (\d) probe (\S+) preload (\S+)', line)
    if m:
        key, first = (m[2], m[3]), True
        continue
    m = re.search(r'([\d.]+) us', line)
    if m and key:
        if first:
            first = False
            continue
        runs[key].append(float(m[1]))
for (probe, preload), v in sorted(runs.items()):
    v.sort()
    print(f'{probe:4} {preload:6} median {v[len(v) // 2]:.2f} us, range {v[0]:.2f} - {v[-1]:.2f}, '
          f'{len(v)} repetitions')
