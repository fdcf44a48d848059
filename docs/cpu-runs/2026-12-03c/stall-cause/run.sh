#!/bin/bash
# run.sh SEED N RANKS TIMEOUT [LIB]: repeat the traced random program under a busy loop with
# the debug build /tmp/dbg3 (or the library LIB); keep the logs of runs that fail or report a
# wait over 3 s.
timeout 6000 bash -c "while :; do :; done" &
hog=$!
for i in $(seq 1 $2); do
  start=$(date +%s)
  PMPI_RANDOM_TRACE=1 COLLX_TIMEOUT=$4 timeout 300 /work/main/test/run_preloaded.sh \
    ${5:-/tmp/dbg3/lib/pmpi/libcollx_mpi.so} $3 /tmp/dbg3/test/pmpi_random $1 300 \
    > p.$1.$i.log 2>&1
  rc=$?
  slow=$(grep -a -c "^SLOW [0-9]" p.$1.$i.log)
  # The longest time between two consecutive trace lines of one rank.
  gap=$(awk '/^trace/ {r = $4; t = $2; if (r in last && t - last[r] > m) m = t - last[r]
                       last[r] = t}
             END {printf "%.2f", m}' p.$1.$i.log)
  echo "$1 $i rc=$rc slow=$slow gap=$gap $(( $(date +%s) - start )) s $(tail -1 p.$1.$i.log)"
  [ $rc -eq 0 ] && [ $slow -eq 0 ] && rm p.$1.$i.log
done
kill $hog
