#!/usr/bin/env bash
# The preload job (tools/run-preload-benchmark) N times in a row (default 12) on an otherwise
# idle machine: pre.K.txt here, then median.md (tools/median-table) and usual-mode.md (the
# ratios over the runs where MPICH was in its usual mode). REPO: the checkout to run (default
# /work/main).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${N:-12}
cd "${REPO:-/work/main}"
for k in $(seq 1 "$n"); do tools/run-preload-benchmark > "$here/pre.$k.txt" 2>&1; done
files=()
for k in $(seq 1 "$n"); do files+=("$here/pre.$k.txt"); done
tools/median-table "${files[@]}" > "$here/median.md"
tools/usual-mode "${files[@]}" > "$here/usual-mode.md"
