"""The table docs/cuda.md shows, from the output of benches/sweep_examples.sh.

Each example's row: its ranks, what happened (right; ran, for a test
collective, which defines no result; stopped; refused with its code), and
its largest size's time, busbw and share of a device-to-device copy.

    bash benches/sweep_examples.sh > sweep.txt
    python3 benches/sweep_table.py sweep.txt
"""

import re
import sys


def size_text(size):
    if size == 0:
        return "0"
    return f"{size >> 20}M" if size >= 1 << 20 else f"{size >> 10}K"


def main(path):
    text = open(path).read()
    summary = {}
    for line in text.split("### summary")[1].splitlines():
        m = re.match(r"(examples/\S+): (.*)", line)
        if m:
            summary[m.group(1)] = m.group(2)
    print("| example | ranks | result | largest size | time (us) | busbw (GB/s) | of d2d (%) |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for block in text.split("### ")[1:]:
        lines = block.splitlines()
        name = lines[0].strip()
        if name == "summary":
            continue
        m = re.search(r"\((\w+), (\d+) ranks\)", block)
        collective, ranks = (m.group(1), m.group(2)) if m else ("", "")
        rows = [l.split() for l in lines if re.match(r"^ +\d+ ", l) and len(l.split()) >= 11]
        result = summary[name]
        if result == "right" and collective == "test":
            result = "ran (a test collective: no result to check)"
        elif result.startswith("refused"):
            code = re.search(r"error\[(E\d+)\]", result)
            result, ranks = f"refused ({code.group(1) if code else '?'})", ""
        shown = name[len("examples/"):]
        if rows and result != "stopped":
            row = rows[-1]
            size = size_text(int(row[0]))
            print(f"| {shown} | {ranks} | {result} | {size} | {row[5]} | {row[7]} | {row[10]} |")
        else:
            print(f"| {shown} | {ranks} | {result} |  |  |  |  |")


if __name__ == "__main__":
    main(sys.argv[1])
