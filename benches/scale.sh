#!/usr/bin/env bash
# Compile time and memory as the ranks grow, 8 to 1,024, for the ports
# clusters will compile at scale: the single-node AllReduce and AllToAll
# ring (all pairs), the multi-node AllGather with thread-block groups and
# MSCCL++'s default multi-node AllReduce. Per case and rank count: wall
# seconds and peak memory (GNU time), each stage from --timings, and the
# whole compile over the time to write the plan it made (the goal is 3x).
#
#   bash benches/scale.sh              # 8 to 1024 ranks
#   bash benches/scale.sh 64 128       # only these rank counts
#
# --max-ops is raised: the default bounds a runaway loop, not a plan this
# large on purpose. MSCLC names a msclc already built (on a machine
# without cargo).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MSCLC:-}" ]; then
  cargo build --release --quiet
fi
bin=${MSCLC:-target/release/msclc}
out=$(mktemp)
log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
ranks=("$@")
[ ${#ranks[@]} -eq 0 ] && ranks=(8 16 32 64 128 256 512 1024)

# A port, then the -D settings besides num_gpus.
cases=(
  single_node/allreduce.mscl
  single_node/alltoall/alltoall_ring.mscl
  "multi_node/allgather_tbg.mscl -D gpus_per_node=8 -D tbg_size=4"
  "default_algos/allreduce_multi_nodes.mscl -D gpus_per_node=8"
)

printf '%-26s %6s %9s %9s %10s %9s %9s %8s %7s\n' \
  case ranks seconds peak_MB evaluate_s passes_s write_s plan_MB /write
for entry in "${cases[@]}"; do
  read -r case settings <<<"$entry"
  for n in "${ranks[@]}"; do
    # The plan before is on the disk first: a gigabyte still being written
    # out slowed the next case by half. It is emptied here, not by the
    # rename over it: freeing a gigabyte took 0.17 s of a 2 MB write.
    if [[ $case == default_algos/* ]] && ((n < 16)); then
      # gpus_per_node=8: under 16 ranks there is one node, and the
      # program refuses to run on one (E0304).
      printf '%-26s %6d  skipped: two nodes of 8 are 16 ranks or more\n' "$(basename "$case" .mscl)" "$n"
      continue
    fi
    : >"$out"
    sync
    # shellcheck disable=SC2086 # $settings holds separate -D words
    if ! /usr/bin/time -f 'wall %e %M' "$bin" "examples/mscclpp/$case" -D num_gpus="$n" $settings \
      -q --timings --max-ops 1000000000 -o "$out" >"$log" 2>&1; then
      printf '%-26s %6d  failed: %s\n' "$(basename "$case" .mscl)" "$n" "$(grep -m1 'error' "$log")"
      continue
    fi
    stage() { awk -v s="$1" '$1 == s { print $2 / 1000 }' "$log"; }
    read -r _ secs kb < <(grep '^wall' "$log")
    printf '%-26s %6d %9.2f %9.1f %10.2f %9.2f %9.2f %8.1f %7.1f\n' "$(basename "$case" .mscl)" "$n" \
      "$secs" "$(echo "$kb / 1024" | bc -l)" "$(stage evaluate)" "$(stage passes)" "$(stage write)" \
      "$(echo "$(stat -c %s "$out") / 1048576" | bc -l)" \
      "$(echo "$(stage total) / $(stage write)" | bc -l)"
  done
done
