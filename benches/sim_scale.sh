#!/usr/bin/env bash
# Times `msclc sim` against `msclc` compiling the same plan, at scale: the
# table of docs/simulator.md ("Speed"). Release build; GNU time for peak
# memory. Usage: bash benches/sim_scale.sh [OUT_DIR]   (plans are large:
# about 1 GB each at 1,024 ranks)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
msclc=target/release/msclc
out=${1:-$(mktemp -d)}
mkdir -p "$out"
# Runs a command; its standard output goes to $out/stdout; prints "SECONDS KB".
time_of() { /usr/bin/time -f "%e %M" -o "$out/time" "$@" >"$out/stdout" 2>/dev/null || true; tail -1 "$out/time"; }
printf '| plan | ranks | ops run | compile | sim | peak (sim) |\n|---|---:|---:|---:|---:|---:|\n'
while read -r name source ranks; do
  plan="$out/$name-$ranks.json"
  read -r compile _ < <(time_of "$msclc" "$source" -D "num_gpus=$ranks" -o "$plan")
  read -r sim peak < <(time_of "$msclc" sim --quiet --max-memory 64G "$plan")
  ops=$(grep -o '[0-9]* ops run' "$out/stdout" | cut -d' ' -f1 || true)
  printf '| %s | %s | %s | %s s | %s s | %s MB |\n' "$name" "$ranks" "$ops" "$compile" "$sim" "$((peak / 1024))"
  rm -f "$plan"
done <<'PLANS'
alltoall_pkt examples/mscclpp/single_node/alltoall/alltoall_pkt.mscl 64
alltoall_pkt examples/mscclpp/single_node/alltoall/alltoall_pkt.mscl 128
alltoall_pkt examples/mscclpp/single_node/alltoall/alltoall_pkt.mscl 256
alltoall_pkt examples/mscclpp/single_node/alltoall/alltoall_pkt.mscl 1024
allreduce examples/mscclpp/single_node/allreduce.mscl 256
allreduce examples/mscclpp/single_node/allreduce.mscl 1024
allreduce_pkt examples/mscclpp/single_node/allreduce_pkt.mscl 64
ring_allreduce benches/ring_allreduce.mscl 512
ring_allreduce benches/ring_allreduce.mscl 1024
PLANS
