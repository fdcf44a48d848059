#!/bin/bash
# When a "STILL 1s" trace line appears (once per run): each thread's state and CPU ticks, twice,
# 0.5 s apart, and each process's PMI rank.
dumped=""
while :; do
  pids=$(pgrep -x pmpi_random | tr '\n' ' ')
  if [ -n "$pids" ] && [ "$dumped" != "$pids" ] && [ -n "$(grep -h STILL /tmp/ct/t.* 2>/dev/null | cut -d" " -f2- | sort | uniq -d | head -1)" ]; then
    dumped="$pids"
    d=gap.$(date +%s)
    mkdir -p $d
    grep -h STILL /tmp/ct/t.* > $d/when
    for k in 1 2 3; do
      for pid in $pids; do
        r=$(tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep ^PMI_RANK= | cut -d= -f2)
        for t in /proc/$pid/task/*; do
          echo "$(cat /proc/uptime | cut -d' ' -f1) W$r $pid $(basename $t) $(cut -d' ' -f2,3,14,15,39 $t/stat 2>/dev/null) $(cat $t/wchan 2>/dev/null)"
        done
      done >> $d/threads.$k
      sleep 0.5
    done
  fi
  sleep 0.1
done
