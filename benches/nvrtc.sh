#!/usr/bin/env bash
# NVRTC compile time of the CUDA that `--emit cuda` writes for the quick
# start and the largest examples, best of three, and each as a multiple of
# the quick start's. NVRTC needs no GPU: it is found as tests find it
# (MSCLC_NVRTC, else target/ci-nvrtc from .ci/run).
#
#   bash benches/nvrtc.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
lib=${MSCLC_NVRTC:-$PWD/target/ci-nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12}
[ -f "$lib" ] || { echo "no NVRTC at $lib: run .ci/run once, or set MSCLC_NVRTC" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
examples=(
    examples/simple_allgather.mscl
    examples/mscclpp/single_node/allreduce_pkt.mscl
    examples/mscclpp/single_node/alltoall/alltoall_ring.mscl
    examples/mscclpp/single_node/allgather_ring.mscl
    examples/mscclpp/multi_node/allgather_tbg.mscl
)
files=()
for f in "${examples[@]}"; do
    out="$dir/$(basename "$f" .mscl).cu"
    target/release/msclc "$f" --emit cuda -o "$out"
    files+=("$out")
done
printf "%-20s %10s %8s %10s %8s\n" example "source B" seconds "cubin B" "x start"
python3 benches/nvrtc_time.py "$lib" 3 "${files[@]}" | awk -F'\t' '
    { n = split($1, p, "/"); name = p[n]; sub(/\.cu$/, "", name) }
    NR == 1 { base = $3 }
    { printf "%-20s %10d %8.2f %10d %8.1f\n", name, $2, $3, $4, $3 / base }'
