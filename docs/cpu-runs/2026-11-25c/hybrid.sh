#!/usr/bin/env bash
# The loop behind hybrid.txt (run from the terminal, output kept with tee): cached stores for
# everything, against cached copy-in with the result put with streaming stores
# (EXP_PUT_STREAM, in breakdown.patch), 1 MiB, three rounds, each after the probe's line.
# The build of breakdown.sh's /tmp/exp is used.
for r in 1 2 3; do
  build/bench/cpu_pair_probe
  for v in "" "-genv EXP_PUT_STREAM 1"; do
    echo "-- cached $v"
    (cd /tmp/exp && mpiexec -n 2 -genv COLLX_SHM_STORES cached $v build/bench/collx_osu \
      -m 1048576:1048576 -c -i 2000 -x 200 -I 2000 -X 200 -r 1 2>&1 | grep -E "^1048576|breakdown")
  done
done
