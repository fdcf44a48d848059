import sys, collections
def load(p):
    d = {}
    for l in open(p):
        f = l.split()
        if len(f) < 9: continue
        t, w, pid, tid, name, st, ut, stt = f[0], f[1], f[2], f[3], f[4], f[5], int(f[6]), int(f[7])
        d[tid] = (float(t), w, name, st, ut + stt, f[9] if len(f) > 9 else '', f[8])
    return d
a, b = load(sys.argv[1] + '/threads.1'), load(sys.argv[1] + '/threads.3')
for tid in sorted(a, key=lambda x: (a[x][1], int(x))):
    if tid not in b: continue
    ta, w, name, st, ca, wchan, cpu = a[tid]
    tb, _, _, stb, cb, wchanb, cpub = b[tid]
    print(f"{w} {tid:>6} {name:<15} {st}->{stb} cpu_ticks/s={(cb-ca)/(tb-ta):6.1f} wchan={wchan}->{wchanb}")
