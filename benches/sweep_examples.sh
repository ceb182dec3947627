#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: runs every example at its defaults with
# `msclc run FILE --size 4K:4M --iters 3 --warmup 1 --timeout 3` and prints
# each table under "### FILE", its exit code, and at the end one line per
# example and the counts: right, wrong, stopped (a wait gave up) and refused
# (no CUDA form, no size that fits, ...). docs/cuda.md shows the last sweep,
# as benches/sweep_table.py makes its table from this output.
# Usage: bash benches/sweep_examples.sh [MSCLC]   (default target/release/msclc)
set -uo pipefail
cd "$(dirname "$0")/.."
msclc=${1:-target/release/msclc}
[ -x "$msclc" ] || cargo build --release --quiet
summary=()
right=0 wrong=0 stopped=0 refused=0
for f in $(find examples -name '*.mscl' | sort); do
  echo "### $f"
  start=$(date +%s%N)
  out=$("$msclc" run "$f" --size 4K:4M --iters 3 --warmup 1 --timeout 3 2>&1)
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$out"
  echo "rc=$rc ms=$ms"
  if [ $rc -eq 0 ]; then
    result=right; right=$((right + 1))
  elif grep -q "the kernel stopped waiting" <<<"$out"; then
    result=stopped; stopped=$((stopped + 1))
  elif grep -q "FAILED" <<<"$out"; then
    result=wrong; wrong=$((wrong + 1))
  else
    result="refused: $(grep -m1 '^error' <<<"$out")"; refused=$((refused + 1))
  fi
  summary+=("$f: $result")
done
echo "### summary"
printf '%s\n' "${summary[@]}"
echo "$right right, $wrong wrong, $stopped stopped, $refused refused"
