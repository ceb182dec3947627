#!/usr/bin/env bash
# What one op costs the evaluator, in instructions: the numbers behind
# "What is left" in docs/ports.md (issue 36), for choosing what to make
# cheaper next. Each case is a small program whose loop runs REPS times;
# it is compiled at REPS=8 and REPS=16 under valgrind's callgrind, and
# the difference in instructions, divided by the ops (or loop iterations)
# the second half adds, is the cost of one, free of the process's start
# and the program's fixed work. Instruction counts do not vary from run
# to run as times do, so a change of a few percent shows.
#
#   bash benches/per_op.sh
#
# Needs valgrind (Debian: apt-get install valgrind); says so and stops
# without it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null; then
  echo "skipped: valgrind is not installed (Debian: apt-get install valgrind)"
  exit 0
fi
# On a machine without cargo: MSCLC names a msclc already built.
if [ -z "${MSCLC:-}" ]; then
  cargo build --release --quiet
fi
bin=${MSCLC:-$PWD/target/release/msclc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=16

# The program around a case's loop body: REPS thread blocks, each running
# BODY for every rank (`gpu`) and an index of that rank's input.
program() {
  cat <<EOF
import "std/sync"
param reps: int = 8
program "per_op" {
    collective = allreduce($n, chunk_factor: reps, inplace: true)
    protocol = Simple
}
let channels = all_pairs_channels($n)
for tb in 0..reps {
    for gpu in 0..$n {
        let index = gpu * reps + tb
        let mine = rank(gpu).input[index]
$1
    }
}
EOF
}

# The instructions a compile of $1 takes with reps=$2; a compile that
# fails prints what msclc said and stops the script.
instructions() {
  if ! valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" -D reps="$2" -q \
    -o "$work/plan.json" >"$work/log" 2>&1; then
    cat "$work/log" >&2
    exit 1
  fi
  awk '/refs:/ { gsub(",", "", $4); print $4 }' "$work/log"
}

# name, per (what one unit is), units each rep adds, loop body.
cases=(
  "loop|iteration|$((2 * n * n))|        for peer in 0..$n where peer != gpu { let c = peer }
        for peer in 0..$n where peer != gpu { let c = peer }"
  "signal and wait|op|$((2 * n * (n - 1)))|        for peer in 0..$n where peer != gpu { channels[(peer, gpu)].signal(tb: tb) }
        for peer in 0..$n where peer != gpu { channels[(peer, gpu)].wait(tb: tb) }"
  "reduce and put|op|$((2 * n * (n - 1)))|        for peer in 0..$n where peer != gpu { channels[(peer, gpu)].reduce(mine, [rank(peer).input[index]], tb: tb) }
        for peer in 0..$n where peer != gpu { channels[(peer, gpu)].put(rank(peer).input[index], mine, tb: tb) }"
)

printf '%-18s %s\n' case instructions
for entry in "${cases[@]}"; do
  # The body's lines are read too (up to the end, which `read` reports).
  IFS='|' read -r -d '' name per units body <<<"$entry" || true
  file="$work/case.mscl"
  program "$body" >"$file"
  low=$(instructions "$file" 8)
  high=$(instructions "$file" 16)
  printf '%-18s %d per %s\n' "$name" "$(((high - low) / (8 * units)))" "$per"
done
