#!/usr/bin/env python3
"""Fills the generated sections of the docs from the committed bench/report.md.

Every benchmark figure quoted in a README or a doc lies between two markers,

    <!-- report:NAME -->...<!-- /report:NAME -->

and NAME is one of the SECTIONS below, which renders it from bench/report.md alone: a
figure changes in one place (a new `make bench`), and every quote follows. A section may
be inline (within a sentence) or a block (the markers on lines of their own).

    python3 bench/sections.py --write    # make readme-figures: refill every section
    python3 bench/sections.py --check    # make check-figures: fail on a stale section

Standard library only.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "bench" / "report.md"
# The files that quote figures; a marker elsewhere is not filled.
FILES = ["README.md", "bindings/go/README.md", "python/README.md", "docs/benchmarks.md"]
SECTION = re.compile(r"<!-- report:([\w-]+) -->(.*?)<!-- /report:\1 -->", re.S)
OPENING = re.compile(r"<!-- /?report:([\w-]+) -->")


class ReportError(Exception):
    """The report lacks what a section quotes."""


# ---- reading the report ----------------------------------------------------------------------


class Report:
    """The machine lines, the targets table and the rows of each suite of a report.md."""

    def __init__(self, text):
        self.machine = {}
        self.targets = []      # the lines of the targets table, as written
        self.rows = {}         # make target -> list of row dicts of its table
        section = None
        for line in text.splitlines():
            heading = re.match(r"## (.*)", line)
            if heading:
                section = self._section(heading.group(1))
                continue
            if section == "Machine" and line.startswith("- "):
                key, _, value = line[2:].partition(": ")
                self.machine[key] = value
            elif section == "Targets" and line.startswith("|"):
                self.targets.append(line)
            elif section in self.rows and line.startswith("| W"):
                self.rows[section].append(self._row(line))

    def _section(self, heading):
        target = re.search(r"\(`make (bench-[\w-]+)`\)", heading)
        if target:
            self.rows[target.group(1)] = []
            return target.group(1)
        return heading

    @staticmethod
    def _row(line):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        keys = ("workload", "n", "figure", "impl", "value", "baseline", "base_value", "ratio")
        return dict(zip(keys, cells))

    def row(self, target, impl, workload, figure, n=None, baseline=None):
        """The first row of `target` with that impl (ours, or the baseline when `baseline`
        is true), workload, figure and n, if given."""
        column = "baseline" if baseline else "impl"
        for row in self.rows.get(target, []):
            if (row[column], row["workload"], row["figure"]) == (impl, workload, figure) \
                    and (n is None or row["n"].split(" / ")[0] == n):
                return row
        raise ReportError(f"bench/report.md has no {figure} of {impl} in {workload} "
                          f"(make {target}{', n=' + n if n else ''})")

    def value(self, target, impl, workload, figure, n=None):
        """A figure of ours as the report prints it."""
        return self.row(target, impl, workload, figure, n)["value"]

    def base(self, target, impl, workload, figure, n=None):
        """A figure of a baseline as the report prints it."""
        return self.row(target, impl, workload, figure, n, baseline=True)["base_value"]

    def target(self, interface, label):
        """(measured, bound, met) of a row of the targets table."""
        for line in self.targets[2:]:
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if cells[:2] == [interface, label]:
                return cells[2:]
        raise ReportError(f"bench/report.md has no target '{label}' of {interface}")


# ---- the sections ----------------------------------------------------------------------------


def run_line(report):
    """When and where the report was made."""
    load = report.machine["load average at start"].split()[0]
    return (f"{report.machine['date'].split()[0]}, {report.machine['CPUs (nproc)'].split(',')[0]}"
            f" CPUs, load average {load} at the start")


def targets_table(report):
    return "\n".join(report.targets)


def w3_core(report):
    rust = [report.value("bench-runtime", "timerwheel-rust", "W3", f)
            for f in ("late_p50_us", "late_p99_us")]
    c = [report.value("bench-c", "timerwheel-c", "W3", f) for f in ("late_p50_us", "late_p99_us")]
    return (f"median lateness {rust[0]} us and p99 {rust[1]} us through the Rust API, "
            f"{c[0]} us and {c[1]} us through the C ABI")


def w4_idle(report):
    ours = report.value("bench-runtime", "timerwheel-rust", "W4", "idle_cpu_pct")
    heap = report.base("bench-runtime", "heap-timer", "W4", "idle_cpu_pct")
    return f"{ours} % CPU (the same-shape heap timer: {heap} %)"


def w1_c_bytes(report):
    return report.value("bench-c", "timerwheel-c", "W1", "bytes_per_timer")


def w3_go(report):
    ours = report.value("bench-go", "timerwheel-go", "W3", "late_p99_us")
    time_ = report.base("bench-go", "go-time", "W3", "late_p99_us")
    p50 = [report.value("bench-go", "timerwheel-go", "W3", "late_p50_us"),
           report.base("bench-go", "go-time", "W3", "late_p50_us")]
    return (f"Go's W3 median is {p50[0]} us (`time.AfterFunc`: {p50[1]} us) but its p99 "
            f"{ours} us (`time.AfterFunc`: {time_} us, in the same run)")


def w3_python(report):
    big = report.row("bench-python", "timerwheel-python", "W3", "fired", n="1,000,000")
    p = [report.value("bench-python", "timerwheel-python", "W3", f, n="1,000,000")
         for f in ("late_p50_us", "late_p99_us")]
    small = [report.value("bench-python", "timerwheel-python", "W3", "late_p99_us", n="200,000"),
             report.base("bench-python", "asyncio", "W3", "late_p99_us")]
    return (f"Python fired {big['value']} of {big['n']} with a median of {p[0]} us and a p99 "
            f"of {p[1]} us; at 200,000 its p99 was {small[0]} us against asyncio's "
            f"{small[1]} us")


def suite_rows(report, target, picks):
    """A table of ours against the baseline for the (workload, figure, n) in picks."""
    lines = ["| workload | n | figure | timerwheel | baseline | ratio |", "|---|---:|---|---:|---:|---:|"]
    for workload, figure, n in picks:
        row = next((r for r in report.rows.get(target, [])
                    if (r["workload"], r["figure"]) == (workload, figure)
                    and r["n"].split(" / ")[0] == n and r["baseline"] != "-"), None)
        if row is None:
            raise ReportError(f"bench/report.md has no {figure} in {workload} (make {target})")
        lines.append(f"| {workload} | {row['n']} | {figure} | {row['value']} "
                     f"| {row['base_value']} ({row['baseline']}) | {row['ratio']} |")
    return "\n".join(lines)


def go_table(report):
    picks = [("W1", f, "1,000,000") for f in ("add_cancel_ns", "add_ns", "cancel_ns",
                                               "bytes_per_timer")]
    picks += [("W2", "touch_ns", "1,000,000")]
    picks += [("W3", f, "1,000,000") for f in ("late_p50_us", "late_p99_us", "late_max_us")]
    return suite_rows(report, "bench-go", picks)


def python_table(report):
    picks = [("W1", f, "200,000") for f in ("add_ns", "cancel_ns", "bytes_per_timer")]
    picks += [("W2", "touch_ns", "200,000")]
    picks += [("W3", f, "200,000") for f in ("late_p50_us", "late_p99_us", "late_max_us")]
    return suite_rows(report, "bench-python", picks)


def baselines(report):
    """The other libraries' times, sizes and lateness, one line per library and interface
    (timerwheel's own variants, such as a fixed pool, left out)."""
    lines = []
    for target, rows in report.rows.items():
        seen = {}
        for row in rows:
            if row["baseline"] == "-" or row["baseline"].startswith("timerwheel-") \
                    or not row["figure"].endswith(("_ns", "_us", "_pct", "bytes_per_timer")):
                continue
            figures = seen.setdefault(row["baseline"], {})
            figures.setdefault(f"{row['workload']} {row['figure']}", row["base_value"])
        for name, figures in seen.items():
            text = ", ".join(f"{key} {value}" for key, value in figures.items())
            lines.append(f"- {name} (`make {target}`): {text}")
    return "\n".join(lines)


SECTIONS = {
    "run": run_line,
    "targets": targets_table,
    "w3-core": w3_core,
    "w4-idle": w4_idle,
    "w1-c-bytes": w1_c_bytes,
    "w3-go": w3_go,
    "w3-python": w3_python,
    "go-table": go_table,
    "python-table": python_table,
    "baselines": baselines,
}


# ---- filling the files -----------------------------------------------------------------------


def render(name, report, path):
    if name not in SECTIONS:
        raise ReportError(f"{path}: unknown section '{name}' (bench/sections.py: SECTIONS)")
    text = SECTIONS[name](report)
    return f"\n\n{text}\n\n" if "\n" in text else text


def fill(text, report, path):
    """The text with every section rendered; fails on a marker without its pair."""
    opened = [m.group(0) for m in OPENING.finditer(SECTION.sub("", text))]
    if opened:
        raise ReportError(f"{path}: marker without its pair: {opened[0]}")

    def replace(match):
        name = match.group(1)
        return f"<!-- report:{name} -->{render(name, report, path)}<!-- /report:{name} -->"
    return SECTION.sub(replace, text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="refill the sections in place")
    mode.add_argument("--check", action="store_true", help="fail when a section is stale")
    args = parser.parse_args()
    report = Report(REPORT.read_text())
    stale = []
    try:
        for name in FILES:
            path = ROOT / name
            text = path.read_text()
            filled = fill(text, report, name)
            if filled == text:
                continue
            if args.write:
                path.write_text(filled)
                print(f"readme-figures: refilled {name}")
            else:
                stale.append(name)
    except ReportError as error:
        print(f"sections: {error}", file=sys.stderr)
        return 1
    for name in stale:
        print(f"check-figures: {name} quotes figures that differ from bench/report.md: "
              "run 'make readme-figures'", file=sys.stderr)
    if args.check and not stale:
        print(f"check-figures: every section matches bench/report.md ({', '.join(FILES)})")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
