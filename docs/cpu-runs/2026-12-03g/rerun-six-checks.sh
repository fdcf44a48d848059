#!/usr/bin/env bash
# Three of the six extra checks run again (README here): tools/run-tests' own lines 90 - 112,
# 121 - 128 and 177 - 182 at e608846, taken from git, with a one-line `check` and the
# variables they use; run in CI's clone (/tmp/x), after the builds its run had made.
set -uo pipefail
lines=$(git -C "$(dirname "$0")" show e608846:tools/run-tests | sed -n '90,112p;121,128p;177,182p')
cd /tmp/x || exit 1
status=0 dir=build-test asan=build-asan
check() {
  local name=$1 start=$SECONDS; shift; echo "== $name"
  if "$@"; then echo "== $name: ok in $((SECONDS - start)) s"
  else echo "== $name FAILED"; status=1; fi
}
eval "$lines"
exit $status
