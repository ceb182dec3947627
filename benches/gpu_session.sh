#!/usr/bin/env bash
# Everything a lent GPU should measure, in one command that fits a short
# lease (about 3 minutes on an H100), each step under a time limit and
# each result written as soon as it is made:
#   quick.txt    the machine; 1 KB to 1 MB of allreduce and allgather_pkt
#                at 8 ranks and the sync-only unit tests, launches issued
#                one by one and captured in a CUDA graph (--graph)
#   wall.txt     wall time and peak host memory of `msclc run` for the
#                8-rank allreduce at 1 GB alone and over 1K:1G
#   results.tgz  benches/results remeasured (bash benches/gpu_results.sh)
#   graph.txt    the unit tests' tables again with --graph, the kernel
#                alone (what benches/graph holds and docs/timing.md fits)
#   sweep.txt    every example, 4K-4M (bash benches/sweep_examples.sh)
#   gputest.txt  cargo's tests/gpu.rs, every example held to `msclc sim`
# Built where cargo is (the GPU machine may have none):
#   cargo build --release && cargo test --release --test gpu --no-run
# then run on the GPU machine with OUT set to a folder for the results and
# GPU_TEST naming the test binary (target/release/deps/gpu-*).
# Usage: OUT=DIR [GPU_TEST=BIN] bash benches/gpu_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?set OUT to a folder for the results}
msclc=$PWD/target/release/msclc
ar=examples/mscclpp/single_node/allreduce.mscl
step() { # step SECONDS FILE COMMAND...: runs it, appends its output and time
  local limit=$1 file=$2; shift 2
  echo "## $* (limit ${limit}s)" >>"$file"
  local start=$(date +%s%N)
  timeout "$limit" "$@" >>"$file" 2>&1
  echo "## rc=$? wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))" >>"$file"
}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  ls /usr/local/cuda/lib64/libnvrtc.so* 2>&1
  git log -1 --format='main at %h'
} >"$out/quick.txt" 2>&1
# msclc finds NVRTC in the toolkit by itself; if not, say so and help it.
if ! "$msclc" run "$ar" --size 1K:1K --iters 1 --warmup 0 >>"$out/quick.txt" 2>&1; then
  echo "## first run failed: trying with LD_LIBRARY_PATH=/usr/local/cuda/lib64" >>"$out/quick.txt"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64
fi
for f in "$ar" examples/mscclpp/single_node/allgather_pkt.mscl \
  examples/mscclpp/unit_tests/signal_wait/signal_wait_test.mscl \
  examples/mscclpp/unit_tests/barrier_test.mscl \
  examples/mscclpp/unit_tests/semaphore.mscl; do
  for graph in "" --graph; do
    step 30 "$out/quick.txt" "$msclc" run "$f" --size 1K:1M --iters 100 --warmup 10 $graph
  done
done
step 60 "$out/wall.txt" /usr/bin/time -f '%e s wall, %M KB peak' "$msclc" run "$ar" --size 1G:1G
step 90 "$out/wall.txt" /usr/bin/time -f '%e s wall, %M KB peak' "$msclc" run "$ar" --size 1K:1G
step 150 "$out/gpu_results.log" bash benches/gpu_results.sh "$msclc"
tar czf "$out/results.tgz" benches/results
graph_tables() {
  for table in benches/results/u_*.txt; do
    args=$(sed -n 's/^\$ msclc run //p' "$table" | head -1)
    echo "### $table"
    echo "\$ msclc run $args --graph"
    # shellcheck disable=SC2086 # the arguments are words
    "$msclc" run $args --graph 2>&1 | grep -v '^warning\|^ *[│┌=]'
  done
}
export msclc
export -f graph_tables
step 60 "$out/graph.txt" bash -c graph_tables
step 150 "$out/sweep.txt" bash benches/sweep_examples.sh "$msclc"
if [ -n "${GPU_TEST:-}" ]; then
  # The test binary has this checkout's path where it was built compiled in.
  step 150 "$out/gputest.txt" "$GPU_TEST"
fi
