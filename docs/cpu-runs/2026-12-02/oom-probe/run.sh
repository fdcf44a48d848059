#!/usr/bin/env bash
# The out-of-memory probe (session 60): probe.cc fails the k-th operator new of a one-rank run
# (collx_init, a communicator of one, an allreduce, an iallreduce + wait, destroy, finalize),
# k = 1 .. 45, against a build's libcollx: LIB=<build>/lib bash run.sh > out-<rev>.txt
set -u
lib=${LIB:?LIB: the lib directory of a build}
here=$(cd "$(dirname "$0")" && pwd)
g++ -O1 -g -std=c++20 -I"$here/../../../../include" "$here/probe.cc" -o /tmp/oom-probe \
  -L"$lib" -lcollx -Wl,-rpath,"$lib"
for k in $(seq 1 45); do
  timeout 20 /tmp/oom-probe "$k" > /tmp/oom-probe.out 2>&1
  rc=$?
  text=$(grep -v allocations /tmp/oom-probe.out | paste -s -d ' ' | cut -c1-160)
  echo "k=$k rc=$rc $text"
done

