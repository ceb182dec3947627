#!/usr/bin/env bash
# msclc against the Python DSL, and against the time to write the plan it
# produces: the goals of issue 15, measured with the release build.
#
#   bash benches/versus.sh
#
# Part 1 runs each case with msclc and with the reference DSL in
# ../shared/reference-dsl (needs python3 and sortedcontainers: MSCLC_PYTHONPATH,
# or target/ci-python as .ci/run installs it), best of several runs each,
# and prints the speedup. Without the reference it says so and skips.
# Part 2 compiles each case with --timings and prints the whole compile
# against its "write" stage (writing the text of the plan already in memory),
# with peak memory. Needs GNU time (/usr/bin/time).
# On a machine without cargo: MSCLC names a msclc already built, and
# MSCLC_REFERENCE the reference DSL where it is not in ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MSCLC:-}" ]; then
  cargo build --release --quiet
fi
bin=${MSCLC:-$PWD/target/release/msclc}
ports=examples/mscclpp
reference=${MSCLC_REFERENCE:-../shared/reference-dsl}
pythonpath=${MSCLC_PYTHONPATH:-$PWD/target/ci-python}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The best wall time, in seconds, of $1 runs of the rest of the line.
best_of() {
  local runs=$1
  shift
  python3 - "$runs" "$@" <<'PY'
import subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
best = float("inf")
for _ in range(runs):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    best = min(best, time.perf_counter() - start)
print(f"{best:.4f}")
PY
}

# case, port, reference script, then settings as NAME=VALUE.
versus=(
  "alltoall_ring 32|single_node/alltoall/alltoall_ring.mscl|mscclpp/language/tests/single_node/alltoall/alltoall_ring.py|num_gpus=32"
  "allgather_tbg 64|multi_node/allgather_tbg.mscl|mscclpp/language/tests/multi_node/allgather_tbg.py|num_gpus=64 gpus_per_node=8 tbg_size=4"
  "allreduce 16|single_node/allreduce.mscl|mscclpp/language/tests/single_node/allreduce.py|num_gpus=16"
)

echo "== msclc against the Python DSL (best of 3 Python runs, 10 msclc runs)"
if [ ! -d "$reference" ] || ! PYTHONPATH="$pythonpath" python3 -c 'import sortedcontainers' 2>/dev/null; then
  echo "skipped: the reference DSL ($reference) or sortedcontainers ($pythonpath) is not at hand"
else
  printf '%-18s %10s %10s %9s\n' case python_s msclc_s speedup
  for entry in "${versus[@]}"; do
    IFS='|' read -r name port script settings <<<"$entry"
    defines=() flags=()
    for s in $settings; do
      defines+=(-D "$s")
      flags+=("--${s%%=*}" "${s#*=}")
    done
    py=$(PYTHONPATH="$reference:$pythonpath" best_of 3 python3 "$reference/$script" --name "${port##*/}" "${flags[@]}")
    # -q: the compile alone (no warnings looked for, none printed).
    ours=$(best_of 10 "$bin" "$ports/$port" "${defines[@]}" -q -o "$out")
    printf '%-18s %10.3f %10.4f %8.0fx\n' "$name" "$py" "$ours" "$(echo "$py / $ours" | bc -l)"
  done
fi

echo
echo "== a whole compile against writing its plan (best of 3)"
printf '%-18s %10s %10s %9s %9s\n' case compile_s write_s ratio peak_MB
for entry in "allreduce 128|single_node/allreduce.mscl|num_gpus=128" \
             "allreduce_pkt 64|single_node/allreduce_pkt.mscl|num_gpus=64" \
             "alltoall_ring 64|single_node/alltoall/alltoall_ring.mscl|num_gpus=64"; do
  IFS='|' read -r name port settings <<<"$entry"
  best=""
  for run in 1 2 3; do
    stats=$({ /usr/bin/time -f 'peak %M' "$bin" "$ports/$port" -D "$settings" -q --timings -o "$out"; } 2>&1)
    total=$(awk '$1 == "total" {print $2}' <<<"$stats")
    write=$(awk '$1 == "write" {print $2}' <<<"$stats")
    peak=$(awk '$1 == "peak" {print $2}' <<<"$stats")
    if [ -z "$best" ] || [ "$(echo "$total < ${best%% *}" | bc)" = 1 ]; then
      best="$total $write $peak"
    fi
  done
  read -r total write peak <<<"$best"
  printf '%-18s %10.3f %10.3f %8.1fx %9.0f\n' "$name" "$(echo "$total / 1000" | bc -l)" \
    "$(echo "$write / 1000" | bc -l)" "$(echo "$total / $write" | bc -l)" "$(echo "$peak / 1024" | bc -l)"
done
