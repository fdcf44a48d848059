# schedgroups.py FILES...: from copies of /sys/kernel/debug/sched/debug (named TIME.PID.txt),
# per CPU and time: the running task, the root queue's avg_vruntime, and every group entity's
# vruntime and sum_exec_runtime (ms), so that the first and last snapshots of a stall show
# which group ran and whether its virtual time moved.
import re, sys
for f in sorted(sys.argv[1:], key=lambda p: float(p.split('/')[-1].rsplit('.', 2)[0])):
    t = f.split('/')[-1].rsplit('.', 2)[0]
    cpu = None; grp = None; se = {}; out = {}
    for line in open(f):
        m = re.match(r'cpu#(\d+)', line)
        if m: cpu = int(m.group(1)); out[cpu] = {'groups': {}}; continue
        m = re.match(r'\s+\.curr->pid\s+:\s+(\d+)', line)
        if m and cpu is not None: out[cpu]['curr'] = m.group(1); continue
        m = re.match(r'cfs_rq\[(\d+)\]:(\S+)', line)
        if m: grp = m.group(2); continue
        m = re.match(r'\s+\.(avg_vruntime|se->vruntime|se->sum_exec_runtime)\s+:\s+(\S+)', line)
        if m and cpu is not None and grp is not None:
            if grp == '/' and m.group(1) == 'avg_vruntime': out[cpu]['avg'] = float(m.group(2))
            elif grp != '/': out[cpu]['groups'].setdefault(grp, {})[m.group(1)] = float(m.group(2))
        if line.startswith('runnable tasks'): grp = None
    for c in sorted(out):
        o = out[c]
        rel = lambda v: v.get('se->vruntime', 0) - o.get('avg', 0)
        gs = ' '.join(f"{g.split('-')[-1]}:vr{rel(v):+.1f}"
                      f"/exec{v.get('se->sum_exec_runtime', 0):.0f}"
                      for g, v in sorted(o['groups'].items()))
        print(f"{t} cpu{c} curr {o.get('curr')} avg {o.get('avg', 0):.1f} | {gs}")
