import re,sys,glob
# Summarise valgrind logs: memcheck errors (not leaks), and definite leaks by whether a frame
# is in libcollx (libcollx.so, libcollx_mpi.so) or only in MPICH / the program.
errs=0; leaks_ours=0; leaks_other=0; kinds={}
for f in sys.argv[1:]:
    recs=[]; cur=[]
    for line in open(f, errors='replace'):
        m=re.match(r'==\d+== ?(.*)', line.rstrip('\n'))
        if not m: continue
        t=m.group(1)
        if t=='' :
            if cur: recs.append(cur); cur=[]
        else: cur.append(t)
    if cur: recs.append(cur)
    for r in recs:
        head=r[0]
        if 'WARNING' in head: continue
        if 'definitely lost' in head:
            ours=any(('libcollx' in x) for x in r)
            # the preload's own frames appear as ours; the program's calls into MPI pass through it
            if ours: leaks_ours+=1; print(f, '\n'.join(r), sep='\n'); print()
            else: leaks_other+=1
        elif re.search(r'(Invalid|uninitialised|Conditional jump|Syscall param|Mismatched|overlap|Source and destination)', head):
            errs+=1; kinds[head]=kinds.get(head,0)+1
            print(f, '\n'.join(r[:14]), sep='\n'); print()
print('errors', errs, kinds, 'definite leaks with a libcollx frame', leaks_ours, 'others', leaks_other)
