#!/usr/bin/env bash
# Compiles the largest example ports at 8 to 256 ranks with the release build
# and prints, per case, the ops emitted, wall time and peak memory (the best
# of three runs: the machine's other work only ever adds) and plan size.
#
#   bash benches/compile.sh            # all cases
#   bash benches/compile.sh 8 64       # only these rank counts
#
# Needs GNU time (/usr/bin/time) for peak memory. MSCLC names a msclc
# already built (elsewhere than target/, or on a machine without cargo).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MSCLC:-}" ]; then
  cargo build --release --quiet
  # Where cargo put it, CARGO_TARGET_DIR included.
  bin=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release/msclc
fi
bin=${MSCLC:-$bin}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=(8 16 32 64 128 256)

# A port, then any -D settings besides num_gpus.
cases=(
  "multi_node/allgather_tbg.mscl -D tbg_size=4"
  single_node/alltoall/alltoall_ring.mscl
  single_node/alltoall/alltoall_pipeline.mscl
  single_node/alltoall/alltoall.mscl
  single_node/allgather_ring.mscl
  single_node/allreduce.mscl
  single_node/allreduce_pkt.mscl
)

printf '%-28s %6s %10s %9s %10s %10s\n' case ranks ops seconds peak_MB plan_MB
for entry in "${cases[@]}"; do
  read -r case settings <<<"$entry"
  for n in "${ranks[@]}"; do
    # shellcheck disable=SC2086 # $settings holds separate -D words
    stats=$(for run in 1 2 3; do
      { /usr/bin/time -f '%e %M' "$bin" "examples/mscclpp/$case" -D num_gpus="$n" $settings -q -o "$out"; } 2>&1 | tail -1
    done | sort -n | head -1)
    ops=$(( $(grep -o '"name":' "$out" | wc -l) - 1 ))  # every op has a name; so has the plan
    read -r secs kb <<<"$stats"
    printf '%-28s %6d %10d %9.2f %10.1f %10.1f\n' "$(basename "$case" .mscl)" "$n" "$ops" "$secs" \
      "$(echo "$kb / 1024" | bc -l)" "$(echo "$(stat -c %s "$out") / 1048576" | bc -l)"
  done
done
