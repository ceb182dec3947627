#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: measures `msclc run` again for every
# table of benches/results, each under the command line it records
# ("$ msclc run FILE ARGS"), and rewrites the table. tests/timing/measured.rs then
# checks how many sizes `msclc sim --timing emulated-h100` predicts within
# 20%. To measure a new plan, write a file with its command line first:
#   echo '$ msclc run examples/x.mscl --size 1K:64M' > benches/results/x.txt
# Usage: bash benches/gpu_results.sh [MSCLC [TABLE...]]
#   (default target/release/msclc, every table of benches/results)
set -euo pipefail
cd "$(dirname "$0")/.."
msclc=${1:-target/release/msclc}
[ -x "$msclc" ] || cargo build --release --quiet
shift || true
tables=("$@")
[ ${#tables[@]} -gt 0 ] || tables=(benches/results/*.txt)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
for out in "${tables[@]}"; do
  args=$(sed -n 's/^\$ msclc run //p' "$out" | head -1)
  if [ -z "$args" ]; then
    echo "skipped $out: no \$ msclc run line" >&2
    continue
  fi
  table=$(mktemp)
  {
    echo "# $gpu, $(date -u +%Y-%m-%d)"
    echo "\$ msclc run $args"
    # shellcheck disable=SC2086 # the arguments are words
    rc=0
    "$msclc" run $args || rc=$?
    echo "# rc=$rc"
  } >"$table"
  mv "$table" "$out"
  echo "wrote $out"
done
