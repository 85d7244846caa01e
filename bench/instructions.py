#!/usr/bin/env python3
"""Instructions per call through the C ABI against timeout.c, counted by callgrind.

Runs the program bench/c/instructions.c builds once per implementation under
`valgrind --tool=callgrind` and reads the three dumps it asks for (after the adds, the
resets and the deletes). Callgrind counts every thread of the process, so work a call
leaves to the tick thread counts too. Prints one JSON line per implementation (the figures
are instructions per timer of each phase) and a table of the ratios to timeout.c.

    python3 bench/instructions.py PROGRAM

Standard library only.
"""

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PHASES = ("add", "reset", "delete")
N_TIMERS = 100000  # bench/c/instructions.c's N_TIMERS
IMPLS = (("tw", "timerwheel-c", False), ("timeout", "timeout.c", True))


def phase_totals(out_dir, prefix):
    """{phase: instructions} from the callgrind dumps named prefix.N in out_dir."""
    totals = {}
    for dump in sorted(out_dir.glob(prefix + ".*")):
        text = dump.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: Client Request: (\w+)$", text, re.M)
        total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if trigger and total and trigger.group(1) in PHASES:
            totals[trigger.group(1)] = int(total.group(1))
    return totals


def count(program, arg, out_dir):
    """Instructions per timer of each phase of `program arg` under callgrind."""
    prefix = f"callgrind.{arg}"
    cmd = ["valgrind", "--tool=callgrind", "--quiet",
           f"--callgrind-out-file={out_dir / prefix}", program, arg]
    subprocess.run(cmd, check=True)
    totals = phase_totals(out_dir, prefix)
    missing = [p for p in PHASES if p not in totals]
    if missing:
        sys.exit(f"instructions: no callgrind dump for {', '.join(missing)} of {arg}")
    return {p: totals[p] / N_TIMERS for p in PHASES}


def table(ours, base):
    lines = ["| phase | timerwheel-c | timeout.c | ratio |", "|---|---:|---:|---:|"]
    for p in PHASES:
        lines.append(f"| {p} | {ours[p]:.0f} | {base[p]:.0f} | {ours[p] / base[p]:.2f}x |")
    return "\n".join(lines)


def main():
    program = sys.argv[1]
    figures = {}
    with tempfile.TemporaryDirectory(prefix="tw-instructions-") as tmp:
        for arg, impl, baseline in IMPLS:
            figures[impl] = count(program, arg, Path(tmp))
            row = {"impl": impl, "baseline": baseline, "workload": "instructions",
                   "n": N_TIMERS}
            row.update({f"{p}_instructions": round(v, 1) for p, v in figures[impl].items()})
            print(json.dumps(row), flush=True)
    print(table(figures["timerwheel-c"], figures["timeout.c"]))


if __name__ == "__main__":
    main()
