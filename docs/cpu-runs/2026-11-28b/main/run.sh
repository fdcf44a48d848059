#!/usr/bin/env bash
# The main job (tools/run-benchmark) N times in a row (default 12) on an otherwise idle
# machine: main.K.txt here, then median.md (tools/median-table) and usual-mode.md (the ratios
# over the runs where MPICH was in its usual mode). REPO: the checkout to run (default
# /work/main; CI's fresh clone was used).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${N:-12}
cd "${REPO:-/work/main}"
for k in $(seq 1 "$n"); do tools/run-benchmark > "$here/main.$k.txt" 2>&1; done
files=()
for k in $(seq 1 "$n"); do files+=("$here/main.$k.txt"); done
tools/median-table "${files[@]}" > "$here/median.md"
tools/usual-mode "${files[@]}" > "$here/usual-mode.md"
