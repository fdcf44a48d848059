#!/bin/bash
# Dumps every thread's stack of each pmpi_random process that has run 15 s or more, once per run.
while :; do
  for pid in $(pgrep -x pmpi_random); do
    et=$(ps -o etimes= -p $pid 2>/dev/null | tr -d ' ')
    [ -n "$et" ] && [ "$et" -ge 9 ] || continue
    [ -f stacks.$pid.txt ] && continue
    gdb -p $pid -batch -ex "thread apply all bt" > stacks.$pid.txt 2>&1
  done
  sleep 1
done
