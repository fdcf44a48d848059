#!/usr/bin/env python3
"""float16/bfloat16 kernels, 684f951 (AVX2 + F16C, 8 lanes) against 72477e7 (AVX-512, this
CPU's best level), alternated three times (run.sh); median GB/s of the three, all bytes moved
counted (y op= x: 3n)."""
import glob, os, re, statistics
here = os.path.dirname(os.path.abspath(__file__))
def rate(files):
    d = {}
    for f in files:
        for line in open(f):
            m = re.match(r'^(b?float16/[a-z]+)/(\d+)\s.*bytes_per_second=([\d.]+)G/s', line)
            if m:
                d.setdefault((m[1], int(m[2])), []).append(float(m[3]))
    return {k: statistics.median(v) for k, v in d.items()}
old = rate(glob.glob(os.path.join(here, 'old-684f951.*.txt')))
new = rate(glob.glob(os.path.join(here, 'new-72477e7.*.txt')))
print("| kernel | 256 KiB: 684f951 | 72477e7 | × | 64 MiB: 684f951 | 72477e7 | × |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for name in sorted({k[0] for k in new}, key=lambda n: (not n.startswith('float16'), n)):
    cells = []
    for size in (262144, 67108864):
        o, n = old[(name, size)], new[(name, size)]
        cells += [f"{o:.1f}", f"{n:.1f}", f"{n / o:.2f}"]
    print(f"| {name} | " + " | ".join(cells) + " |")
