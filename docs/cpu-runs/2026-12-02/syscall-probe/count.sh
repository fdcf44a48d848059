#!/usr/bin/env bash
# count.sh STRACE_FILE: the system calls between each BEGIN and END marker, by name.
awk '/BEGIN/ { match($0, /"BEGIN [^"]*"/); name = substr($0, RSTART + 7, RLENGTH - 8); on = 1;
               delete cnt; next }
     /END"/ { on = 0; printf "%-28s", name; for (k in cnt) printf " %s:%d", k, cnt[k]; print "";
              next }
     on { split($0, a, "("); cnt[a[1]]++ }' "$1"
