import re, sys
# gaps.py LOG: the largest gaps between one rank's consecutive trace lines
lines = {}
for l in open(sys.argv[1], errors='replace'):
    m = re.match(r'trace (\d+\.\d+) rank (\d+): (.*)', l)
    if m:
        lines.setdefault(int(m.group(2)), []).append((float(m.group(1)), m.group(3)))
for r in sorted(lines):
    g = [(b[0] - a[0], a, b) for a, b in zip(lines[r], lines[r][1:])]
    g.sort(reverse=True)
    print(f"rank {r}: {len(lines[r])} lines, first {lines[r][0][0]}, last {lines[r][-1][0]}")
    for d, a, b in g[:3]:
        print(f"  {d:.3f} s after {a[0]}: {a[1][:110]}\n      next: {b[1][:110]}")
