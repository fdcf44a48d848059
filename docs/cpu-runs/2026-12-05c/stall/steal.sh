#!/bin/bash
# Every 0.1 s: uptime, steal ticks of cpu0 and cpu1 (when they changed).
prev=""
while :; do
  s=$(awk '/^cpu0 /{a=$9} /^cpu1 /{b=$9} END{print a, b}' /proc/stat)
  if [ "$s" != "$prev" ]; then echo "$(cut -d' ' -f1 /proc/uptime) $s"; prev="$s"; fi
  sleep 0.1
done
