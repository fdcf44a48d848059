#!/usr/bin/env bash
# Two jobs at once on one machine, each with its own shared-memory segments: both must pass,
# and neither may leave a segment in /dev/shm.
#   run_two_jobs.sh PROGRAM
set -u
prog=$1
mpiexec -n 2 "$prog" > /tmp/collx-job1.$$ 2>&1 &
a=$!
mpiexec -n 3 "$prog" > /tmp/collx-job2.$$ 2>&1 &
b=$!
wait $a; ra=$?
wait $b; rb=$?
tail -1 /tmp/collx-job1.$$ /tmp/collx-job2.$$
rm -f /tmp/collx-job1.$$ /tmp/collx-job2.$$
left=$(ls /dev/shm | grep -c '^collx-' || true)
echo "job 1: exit $ra, job 2: exit $rb, segments left in /dev/shm: $left"
[ "$ra" = 0 ] && [ "$rb" = 0 ] && [ "$left" = 0 ]
