#!/usr/bin/env bash
# What the timing model adds to `msclc sim`: the simulation alone, then
# with `--timing` at one size and at the default 21 sizes (1K:1G), on
# allreduce at a few rank counts. The "Speed" table of docs/timing.md.
# Usage: bash benches/timing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
msclc=target/release/msclc
dir=$(mktemp -d)
seconds() { /usr/bin/time -f "%e" -o "$dir/t" "$@" >/dev/null 2>&1 || true; cat "$dir/t"; }
printf '| plan | ranks | sim | + timing, 1 size | + timing, 21 sizes |\n|---|---:|---:|---:|---:|\n'
for ranks in 8 64 128; do
  plan="$dir/allreduce-$ranks.json"
  "$msclc" examples/mscclpp/single_node/allreduce.mscl -D "num_gpus=$ranks" -q -o "$plan"
  sim=$(seconds "$msclc" sim --quiet "$plan")
  one=$(seconds "$msclc" sim --quiet "$plan" --timing h100-ib --size 1M)
  all=$(seconds "$msclc" sim --quiet "$plan" --timing h100-ib)
  printf '| allreduce | %s | %s s | %s s | %s s |\n' "$ranks" "$sim" "$one" "$all"
done
rm -rf "$dir"
