python3 - "$1" <<'PY'
import sys, statistics, re
d = {}
for l in open(sys.argv[1]):
    m = re.match(r'(\S) (\d+) rc=(\d+) ([\d.]+) gap=([\d.]+)', l)
    if not m: continue
    v, i, rc, t, g = m.groups()
    d.setdefault(v, []).append((int(rc), float(t), float(g)))
for v in sorted(d):
    xs = d[v]; ts = sorted(x[1] for x in xs); gs = sorted(x[2] for x in xs)
    print(v, len(xs), 'failed', sum(x[0] != 0 for x in xs), 'time median %.2f mean %.2f max %.2f' % (statistics.median(ts), statistics.mean(ts), ts[-1]),
          '| gap median %.2f max %.2f, >1 s: %d, >2 s: %d' % (statistics.median(gs), gs[-1], sum(g > 1 for g in gs), sum(g > 2 for g in gs)))
PY
