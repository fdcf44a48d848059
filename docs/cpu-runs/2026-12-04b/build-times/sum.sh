#!/usr/bin/env bash
# sum.sh NINJA_LOG: CPU seconds of the compile jobs in a .ninja_log, by kind of file.
awk 'NR>1 {d = ($2 - $1) / 1000
  if ($4 ~ /unit_tests.p|unit_computing/) u += d; else if ($4 ~ /libcollx_internal/) l += d
  else if ($4 ~ /catch2/) c += d; else o += d}
  END {printf "unit test files %.1f s, library %.1f s, Catch2 main %.1f s, other %.1f s\n",
       u, l, c, o}' "$1"
