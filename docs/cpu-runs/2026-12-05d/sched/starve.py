# starve.py FTRACE SAVED_TGIDS [TOP]: the longest times threads were runnable but not running
# (switched out runnable, or woken, until switched in again), with their thread groups
import sys, re
rx_sw = re.compile(r'(?:\((\s*\d+)\) )?\[(\d+)\].*? (\d+\.\d+): sched_switch: prev_comm=(\S+) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)')
rx_wk = re.compile(r' (\d+\.\d+): sched_wakeup: comm=(\S+) pid=(\d+) prio=\d+ target_cpu=(\d+)')
rx_mg = re.compile(r' (\d+\.\d+): sched_migrate_task: comm=(\S+) pid=(\d+) prio=\d+ orig_cpu=(\d+) dest_cpu=(\d+)')
tg = {}
for l in open(sys.argv[2]):
    a, b = l.split(); tg[a] = b
ready = {}; worst = []
end = 0
for line in open(sys.argv[1]):
    m = rx_sw.search(line)
    if m:
        _, cpu, ts, pc, pp, st, nc, np_ = m.groups(); ts = float(ts); end = ts
        if pp in ready:  # switched out, its switch in not recorded (after an untraced task)
            t0, c, _ = ready.pop(pp)
            worst.append((ts - t0, t0, c, pp, 'ran (switch in not recorded: at most this)'))
        if st.startswith('R'): ready[pp] = (ts, pc, int(cpu))
        if np_ in ready:
            t0, c, _ = ready.pop(np_)
            if np_ != '0': worst.append((ts - t0, t0, c, np_, 'ran'))
        continue
    m = rx_wk.search(line)
    if m:
        ts, c, p, cpu = m.groups(); ready.setdefault(p, (float(ts), c, int(cpu)))
for p, (t0, c, cpu) in ready.items():
    if p != '0': worst.append((end - t0, t0, c, p, 'STILL WAITING at end'))
worst.sort(reverse=True)
for w in worst[:int(sys.argv[3]) if len(sys.argv) > 3 else 15]:
    print(f'{w[0]*1000:9.1f} ms from {w[1]:.6f} {w[2]}-{w[3]} (tgid {tg.get(w[3], "?")}) {w[4]}')
