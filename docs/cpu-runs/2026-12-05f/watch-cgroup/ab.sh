#!/usr/bin/env bash
# The worker's watch period in a confined group: the base build (CPUs = online) against the
# new one (CPUs = online, within the control group's CPU set and quota), alternating, every
# process in a cgroup-v1 group given 1 CPU of this 2-CPU VM, as a quota of 100 ms per 100 ms
# (MODE=quota, the default) or as the CPU set {1} (MODE=cpuset); so 2 ranks are crowded only
# for NEW.
#   [MODE=quota|cpuset] ab.sh BASE_BUILD NEW_BUILD ROUNDS SEED... > runs.txt
# One line per run: round, build, program, seed, exit status, seconds; a failed run's log.
set -u
base=$1 new=$2 rounds=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
pre=$here/../../../../test/run_preloaded.sh
if [ "${MODE:-quota}" = cpuset ]; then
  g=/sys/fs/cgroup/cpuset/collx-ab
  mkdir -p "$g"
  echo 1 > "$g/cpuset.cpus"
  echo 0 > "$g/cpuset.mems"
else
  g=/sys/fs/cgroup/cpu/collx-quota-ab
  mkdir -p "$g"
  echo 100000 > "$g/cpu.cfs_period_us"
  echo 100000 > "$g/cpu.cfs_quota_us"
fi
echo $$ > "$g/cgroup.procs"
run() {  # ROUND NAME BUILD PROGRAM SEED ARGS...
  local round=$1 name=$2 b=$3 prog=$4 seed=$5
  shift 5
  local t0 t1 rc
  t0=$(date +%s.%N)
  COLLX_TIMEOUT=60 timeout 300 "$pre" "$b/lib/pmpi/libcollx_mpi.so" 2 "$b/test/$prog" "$seed" \
    300 "$@" > "run.$name.$prog.$seed.$round.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  [ $rc -ne 0 ] || rm -f "run.$name.$prog.$seed.$round.log"  # a failed run's output is kept
  echo "$round $name $prog$* $seed rc=$rc $(echo "$t1 - $t0" | bc)"
}
for round in $(seq "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
  for seed in "$@"; do
    for name in $order; do
      if [ "$name" = base ]; then b=$base; else b=$new; fi
      run "$round" "$name" "$b" pmpi_random "$seed"
      run "$round" "$name" "$b" pmpi_random "$seed" --threads
    done
  done
done
