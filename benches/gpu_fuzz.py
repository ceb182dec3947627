"""Fuzzed programs on a GPU, held to `msclc sim`: what tests/gpu.rs does for
the examples, for programs the fuzzer (tests/fuzz) makes. Its first run
found four disagreements in 318 programs: a semaphore run down over
launches (W0506 since), a port put_packets from raw data, empty CUDA
tables for a plan without blocks, a pipeline of 4e12 iterations. Its
second, four in 455: kernels that stopped in a later launch than the
simulator's two, which `msclc run` now explains by simulating as many.

Here (with cargo and a release build), make the cases:

    python3 benches/gpu_fuzz.py prepare DIR [CASES [SEED]]

runs the fuzzer's program generator with MSCLC_FUZZ_SHOW=1, keeps the
programs `msclc sim` verifies, finds deadlocked or wrong, and writes them
under DIR/progs with DIR/cases.json (verified first: a GPU that gets one
wrong is a bug of the CUDA back end). DIR inside the checkout (not ignored
by git) travels to the GPU machine; there, with OUT set:

    python3 benches/gpu_fuzz.py run DIR SECONDS

runs `msclc run` on each case for at most SECONDS in all and writes
$OUT/runs.txt: each case's verdicts, the output of those that disagree,
and a summary line.

Without a GPU, the same cases run on CPU threads (the generated CUDA built
as C++, as tests/cuda_host.rs builds the examples'):

    MSCLC_HOST_FUZZ=DIR cargo test --release --test cuda_host fuzzed
"""
import json
import os
import random
import re
import subprocess
import sys
import time

MSCLC = "target/release/msclc"
LIMITS = ["--max-ops", "2000"]


def sim_kind(text):
    """The simulator's verdict, from its first line that is not a warning."""
    lines = [l for l in text.split("\n") if l.strip() and not l.startswith(("warning", " "))]
    first = lines[0] if lines else ""
    for prefix, kind in [("verified", "verified"), ("wrong result", "wrong"), ("deadlock", "deadlock")]:
        if first.startswith(prefix):
            return kind, first
    return ("race" if "race" in first else "error"), first


def prepare(folder, cases="3000", seed="4242"):
    env = dict(os.environ, MSCLC_FUZZ_SHOW="1", MSCLC_FUZZ_CASES=cases, MSCLC_FUZZ_SEED=seed)
    shown = subprocess.run(
        ["cargo", "test", "--release", "--test", "fuzz", "generated_programs", "--", "--nocapture"],
        env=env, capture_output=True).stderr.decode("utf-8", "replace")
    os.makedirs(f"{folder}/progs", exist_ok=True)
    by_kind, seen = {}, set()
    for block in re.split(r"^==== ", shown, flags=re.M)[1:]:
        head, _, body = block.partition("\n")
        m = re.match(r"program (\d+): msclc \S+ case\.mscl(.*?) -> ", head)
        if not m or m.group(1) in seen:
            continue
        seen.add(m.group(1))
        defines = re.findall(r"-D (\S+)", m.group(2))
        path = f"progs/p{m.group(1)}.mscl"
        open(f"{folder}/{path}", "w").write(re.split(r"\n---- |\n(?=test |fuzz )", body)[0])
        args = [a for d in defines for a in ("-D", d)]
        try:
            out = subprocess.run([MSCLC, "sim", f"{folder}/{path}", "--max-memory", "1G", *LIMITS, *args],
                                 capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            # A finding of its own: no program is meant to take this long.
            print(f"{path}: msclc sim still running after 120 s", *args)
            continue
        kind, line = sim_kind(out.stdout + out.stderr)
        if kind in ("error", "race"):
            os.remove(f"{folder}/{path}")
            continue
        by_kind.setdefault(kind, []).append({"file": path, "defines": defines, "sim": kind, "line": line})
    random.seed(int(seed))
    wrong = by_kind.get("wrong", [])
    cases = by_kind.get("verified", []) + by_kind.get("deadlock", []) + random.sample(wrong, min(40, len(wrong)))
    json.dump(cases, open(f"{folder}/cases.json", "w"), indent=0)
    print({k: len(v) for k, v in by_kind.items()}, f"-> {len(cases)} cases in {folder}/cases.json")


def run(folder, seconds):
    out = open(f"{os.environ['OUT']}/runs.txt", "w")
    start, tally = time.time(), {}
    for case in json.load(open(f"{folder}/cases.json")):
        if time.time() - start > float(seconds):
            break
        args = [a for d in case["defines"] for a in ("-D", d)]
        try:
            r = subprocess.run([MSCLC, "run", f"{folder}/{case['file']}", *args, "--size", "4K:16K", "--iters", "1",
                                "--warmup", "0", "--timeout", "2", *LIMITS], capture_output=True, text=True, timeout=30)
            so, se, rc = r.stdout, r.stderr, r.returncode
        except subprocess.TimeoutExpired:
            so, se, rc = "", "still running after 30 s", None
        if "the kernel stopped waiting" in se:
            gpu = "stopped"
        elif "FAILED" in so:
            gpu = "wrong"
        elif rc == 0:
            gpu = "right" if "Out of bounds values : 0 OK" in so else "ran"
        else:
            gpu = "refused"
        # tests/gpu.rs's rules, and a kernel that stops in a launch after
        # the first (a semaphore run down) agrees where the simulator, run
        # for as many, finds the plan at fault; a refusal says why in its
        # own words.
        later = gpu == "stopped" and "of this run: the kernel, like the executor" in se
        at_fault = "finds the plan at fault" in se
        agree = {"verified": gpu in ("right", "ran") or (later and at_fault),
                 "deadlock": gpu == "stopped",
                 "wrong": (gpu == "wrong" or later) and at_fault}[case["sim"]] or gpu == "refused"
        tally[(case["sim"], gpu, agree)] = tally.get((case["sim"], gpu, agree), 0) + 1
        out.write(f"{case['file']} sim={case['sim']} gpu={gpu} agree={agree}\n")
        if not agree or gpu == "refused":
            out.write(f"  sim: {case['line']}\n  {se.strip()[-1500:]}\n")
        out.flush()
    out.write(f"SUMMARY in {time.time() - start:.0f} s: {tally}\n")


if __name__ == "__main__":
    {"prepare": prepare, "run": run}[sys.argv[1]](*sys.argv[2:])
