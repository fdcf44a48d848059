import glob,statistics,sys
d=sys.argv[1]
def load(f):
    r={}
    for l in open(f):
        p=l.split()
        if p and p[0].isdigit(): r[int(p[0])]=float(p[1])
    return r
b=[load(f) for f in sorted(glob.glob(d+'/r*-before.txt'))]
a=[load(f) for f in sorted(glob.glob(d+'/r*-after.txt'))]
print(f"rounds: {len(b)} before, {len(a)} after; medians in us")
print("| size (B) | before | after | after/before |"); print("|---|---|---|---|")
for s in sorted(b[0]):
    mb=statistics.median(x[s] for x in b); ma=statistics.median(x[s] for x in a)
    print(f"| {s} | {mb:.3f} | {ma:.3f} | {ma/mb:.3f} |")
