#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: measures `msclc run` on the examples the
# timing model is checked against, and writes each table to
# benches/results/NAME.txt under the command line that made it
# ("$ msclc run FILE ARGS"). tests/timing.rs then checks that
# `msclc sim --timing emulated-h100` predicts every size within 20%.
# Usage: bash benches/gpu_results.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
mkdir -p benches/results
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
while read -r name args; do
  out="benches/results/$name.txt"
  {
    echo "# $gpu, $(date -u +%Y-%m-%d)"
    echo "\$ msclc run $args"
    # shellcheck disable=SC2086 # the arguments are words
    target/release/msclc run $args
  } >"$out"
  echo "wrote $out"
done <<'RUNS'
allreduce examples/mscclpp/single_node/allreduce.mscl --size 1K:1G
allreduce_pkt examples/mscclpp/single_node/allreduce_pkt.mscl --size 1K:64M
allgather examples/mscclpp/single_node/allgather.mscl --size 1K:1G
allgather_pkt examples/mscclpp/single_node/allgather_pkt.mscl --size 1K:64M
alltoall examples/mscclpp/single_node/alltoall/alltoall.mscl --size 1K:1G
ring_allreduce benches/ring_allreduce.mscl --size 1K:256M
RUNS
