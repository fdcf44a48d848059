import sys, re, collections
# runtime.py FTRACE T0 T1 [CPU] [TOP]: each thread's time on the CPU (from sched_switch) in
# [T0, T1], on every CPU or on CPU only, with its switches out by the state it left in
# (R: still runnable, S: asleep); the TOP (default 12) threads with the most time.
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
only = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != '-' else None
top = int(sys.argv[5]) if len(sys.argv) > 5 else 12
rx = re.compile(r"\[(\d+)\] .*? (\d+\.\d+): sched_switch: prev_comm=(\S+) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)")
run = collections.Counter(); cnt = collections.Counter(); cur = {}; since = {}
states = collections.Counter()
for line in open(sys.argv[1]):
    m = rx.search(line)
    if not m: continue
    cpu, ts, pc, pp, st, nc, np_ = m.groups(); ts = float(ts); cpu = int(cpu)
    if only is not None and cpu != only: continue
    if cpu in since and cur.get(cpu):
        a = max(since[cpu], t0); b = min(ts, t1)
        if b > a: run[cur[cpu]] += b - a
    if t0 <= ts <= t1:
        cnt[f'{pc}-{pp}'] += 1
        states[(f'{pc}-{pp}', st)] += 1
    cur[cpu] = f'{nc}-{np_}'; since[cpu] = ts
for k, v in run.most_common(top):
    print(f'{k:28s} {v:8.4f} s  switches-out {cnt[k]:7d}  ' + ' '.join(f'{s}:{n}' for (t, s), n in states.items() if t == k))
print('total', round(sum(run.values()), 4))
