import re,sys,glob,collections
# For every definite leak in the logs: the first MPI function (PMPI_/MPI_) on its stack.
c=collections.Counter(); n=0
for f in glob.glob('/tmp/vgr/logs/*/vg.*.txt'):
    rec=[]
    for line in open(f, errors='replace'):
        m=re.match(r'==\d+== ?(.*)', line.rstrip('\n'))
        if not m: continue
        t=m.group(1)
        if t=='':
            if rec and 'definitely lost' in rec[0]:
                n+=1
                fn=next((re.search(r'(P?MPIX?_\w+)',x).group(1) for x in rec if re.search(r'P?MPIX?_\w+',x)), 'none')
                c[fn]+=1
            rec=[]
        else: rec.append(t)
print(n, dict(c))
