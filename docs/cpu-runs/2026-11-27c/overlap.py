# Medians of the overlap columns (libcollx, MPI) per phase of the VM, over the rounds of a
# tools/ab folder of collx_osu --nonblocking runs: python3 overlap.py FOLDER
import sys, glob, re, statistics as S, os
d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(os.path.join(d, 'r*-[AB].txt'))):
    ab = f[-5]
    txt = open(f).read().splitlines()
    m = re.search(r'round trip (\d+) ns', txt[0])
    rt = int(m.group(1)) if m else 0
    ph = 'third' if rt < 75 else 'near' if rt < 200 else 'far'
    for l in txt:
        if l.startswith('#') or not l.strip() or not l.split()[0].isdigit(): continue
        p = l.split()
        size = int(p[0])
        rows.setdefault((ph, size), {'A': [], 'B': [], 'mA': [], 'mB': []})
        rows[(ph, size)][ab].append(float(p[5])); rows[(ph, size)]['m'+ab].append(float(p[6]))
for ph in ('third', 'near', 'far'):
    ks = sorted(k for k in rows if k[0] == ph)
    if not ks: continue
    n = len(rows[ks[0]]['A'])
    print(f'\n{ph} ({n} rounds): size | overlap % A | B | MPI A | MPI B (medians)')
    for k in ks:
        r = rows[k]
        print(f"| {k[1]} | {S.median(r['A']):.0f} | {S.median(r['B']):.0f} | {S.median(r['mA']):.0f} | {S.median(r['mB']):.0f} |")
