"""Fits emulated-h100's op, local and memory latencies to the unit tests.

docs/timing.md says how the constants of `emulated-h100` were chosen: these
three by least squares of the log error over the unit-test tables of
benches/results (the `u_*.txt`, measured launch by launch), or over the same
plans measured with --graph (benches/graph/*.txt: the kernel alone, timed as
from a launch of 0.8 us with no launch interval). Each candidate is a
topology file over emulated-h100, so nothing in msclc changes to try it;
the collectives' tables are not read: they judge the fit
(tests/timing/measured.rs).

    python3 benches/fit_timing.py                       # launch by launch
    python3 benches/fit_timing.py --graph benches/graph/h100-2026-11-26.txt
    python3 benches/fit_timing.py --op 0.3,0.4,0.5 --local 0.3,0.6,0.9 --memory 0.5,0.75,1

Prints the best candidates: mean squared log error, sizes within 20%.
Needs target/release/msclc (cargo build --release).
"""

import argparse
import glob
import itertools
import json
import math
import os
import re
import subprocess
import tempfile

MSCLC = "target/release/msclc"
ROW = re.compile(r"^ +\d+ ")


def rows(text):
    """size -> time (us) of each row of an nccl-tests style table."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if ROW.match(line) and len(fields) >= 8:
            out[int(fields[0])] = float(fields[5])
    return out


def sim_args(command):
    """`msclc run` arguments as `msclc sim` takes them."""
    words, out = command.split(), []
    i = 0
    while i < len(words):
        if words[i] in ("--iters", "--warmup", "--timeout"):
            i += 2
            continue
        if words[i] not in ("--graph", "--no-cache"):
            out.append(words[i])
        i += 1
    return out


def unit_tables(graph_file):
    """(sim arguments, measured rows) of every unit-test table."""
    if graph_file is None:
        for path in sorted(glob.glob("benches/results/u_*.txt")):
            text = open(path).read()
            command = re.search(r"^\$ msclc run (.*)$", text, re.M).group(1)
            yield sim_args(command), rows(text)
        return
    # Tables under "### benches/results/u_....txt" headers, each with its
    # `$ msclc run ... --graph` line, or just its rows when the header names
    # the table whose command it ran.
    for block in open(graph_file).read().split("### ")[1:]:
        name = block.split()[0]
        if "/u_" not in name:
            continue
        m = re.search(r"^\$ msclc run (.*)$", block, re.M)
        command = m.group(1) if m else re.search(
            r"^\$ msclc run (.*)$", open(name).read(), re.M).group(1)
        yield sim_args(command), rows(block)


def score(tables, latency, folder):
    path = os.path.join(folder, "candidate.json")
    with open(path, "w") as f:
        json.dump({"base": "emulated-h100", "latency_us": latency}, f)
    errors, close = [], 0
    for args, measured in tables:
        out = subprocess.run([MSCLC, "sim", *args, "--timing", path],
                             capture_output=True, text=True, check=False).stdout
        predicted = rows(out)
        for size, us in measured.items():
            p = predicted[size]
            errors.append(math.log(p / us) ** 2)
            close += abs(p - us) / us <= 0.2
    return sum(errors) / len(errors), close, len(errors)


def values(text):
    return [float(v) for v in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", help="a file of unit-test tables measured with --graph")
    parser.add_argument("--op", type=values, default=values("0.2,0.3,0.4,0.5,0.6"))
    parser.add_argument("--local", type=values, default=values("0.3,0.6,0.9,1.2"))
    parser.add_argument("--memory", type=values, default=values("0,0.25,0.5,0.75,1"))
    parser.add_argument("--best", type=int, default=5)
    args = parser.parse_args()
    tables = list(unit_tables(args.graph))
    fixed = {"launch": 0.8, "launch_interval": 0.0} if args.graph else {}
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for op, local, memory in itertools.product(args.op, args.local, args.memory):
            latency = dict(fixed, op=op, local=local, memory=memory)
            results.append((score(tables, latency, folder), (op, local, memory)))
    for (error, close, n), (op, local, memory) in sorted(results)[: args.best]:
        print(f"{error:.4f}  {close}/{n} within 20%  op {op}  local {local}  memory {memory}")


if __name__ == "__main__":
    main()
