#!/usr/bin/env python3
"""One benchmark report for every interface.

Runs each make target named in --targets (the BENCH_TARGETS of the Makefile) with
TW_BENCH_DIR set, collects the JSON lines they print, and writes bench/report.md: the
machine, one table per interface (ours / baseline, measured in the same run), the targets of
docs/benchmarks.md with whether each is met, and bench/w3_lateness.png, the W3 lateness
distribution of timerwheel against the baselines (from the w3-<impl>.csv histograms the W3
benches write into TW_BENCH_DIR).

Standard library only, except the plot, which needs matplotlib (the bench virtualenv of
mk/bench.mk has it); without it the report says the plot was skipped.

    python3 bench/report.py --targets "bench-rust bench-runtime bench-c" [--quick]
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"

# Make target -> the interface it measures. Targets not listed here are run and reported
# under their own name.
SUITES = {
    "bench-rust": "Rust, bare wheel (no threads)",
    "bench-runtime": "Rust API (runtime)",
    "bench-c": "C ABI",
    "bench-python": "Python",
    "bench-go": "Go",
    "bench-durable": "Durable timers (SQLite store)",
}

# What a quick run (--quick) passes to make: every target reads BENCH_ARGS=--quick, the Go
# bench takes its sizes in GO_BENCH_ARGS.
QUICK_VARS = ["BENCH_ARGS=--quick", "GO_BENCH_ARGS=-n 100000 -runs 1"]

# Figures that describe the run rather than measure it.
NOT_FIGURES = {"impl", "baseline", "workload", "n", "touches"}


# ---- running the benches ------------------------------------------------------------------


def run_target(target, quick, log_dir):
    """Runs one bench target; returns (rows, note). The full output goes to a log file."""
    cmd = ["make", "-s", "--no-print-directory", target]
    if quick:
        cmd += QUICK_VARS
    env = dict(os.environ, TW_BENCH_DIR=str(log_dir))
    started = time.monotonic()
    print(f"== {' '.join(cmd)}", flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    seconds = time.monotonic() - started
    (log_dir / f"{target}.log").write_text(proc.stdout)
    sys.stdout.write(proc.stdout)
    rows = parse_rows(proc.stdout)
    if proc.returncode != 0:
        note = f"exited with status {proc.returncode} after {seconds:.0f} s (log: {target}.log)"
    else:
        note = f"ran in {seconds:.0f} s"
    return rows, note


def parse_rows(text):
    """The JSON objects of a bench's output, one per line, that name an impl and workload."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "impl" in row and "workload" in row:
            rows.append(row)
    return rows


# ---- the machine --------------------------------------------------------------------------


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine():
    load = os.getloadavg()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": cpu_model(),
        "kernel": f"{platform.system()} {platform.release()}",
        "load": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    }


# ---- tables --------------------------------------------------------------------------------


def fmt(value):
    if value is None:
        return "-"
    if abs(value) >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.3g}"


def pairs(rows):
    """(workload, figure, ours row, baseline row) for every figure two rows share. A bench
    that runs ours at several sizes (Python) is compared at the baseline's size."""
    for ours in rows:
        if ours.get("baseline"):
            continue
        for base in rows:
            if not base.get("baseline") or base["workload"] != ours["workload"]:
                continue
            if ours.get("n") != base.get("n") and any(
                    r["impl"] == ours["impl"] and r["workload"] == ours["workload"]
                    and r.get("n") == base.get("n") for r in rows):
                continue
            for figure, value in ours.items():
                if figure in NOT_FIGURES or not isinstance(base.get(figure), (int, float)):
                    continue
                yield ours["workload"], figure, ours, base


def sizes(ours, base=None):
    if base is None or ours.get("n") == base.get("n"):
        return fmt(ours.get("n"))
    return f"{fmt(ours.get('n'))} / {fmt(base.get('n'))}"


def suite_table(rows):
    """Markdown table: every figure of ours beside every baseline of the same workload."""
    lines = ["| workload | n | figure | timerwheel | value | baseline | value | ratio |",
             "|---|---:|---|---|---:|---|---:|---:|"]
    paired = set()
    for workload, figure, ours, base in pairs(rows):
        paired.add(id(ours))
        a, b = ours[figure], base[figure]
        ratio = f"{a / b:.2f}x" if b else "-"
        lines.append(f"| {workload} | {sizes(ours, base)} | {figure} | {ours['impl']} "
                     f"| {fmt(a)} | {base['impl']} | {fmt(b)} | {ratio} |")
    for row in (r for r in rows if not r.get("baseline") and id(r) not in paired):
        for figure, value in row.items():
            if figure not in NOT_FIGURES and isinstance(value, (int, float)):
                lines.append(f"| {row['workload']} | {sizes(row)} | {figure} | {row['impl']} "
                             f"| {fmt(value)} | - | - | - |")
    return "\n".join(lines)


# ---- targets (docs/benchmarks.md) -----------------------------------------------------------


def pick(rows, impl, workload, figure, n=None):
    """The figure of the first row of impl on workload (of size n, when given)."""
    for row in rows:
        if row["impl"] == impl and row["workload"] == workload and figure in row \
                and (n is None or row.get("n") == n):
            return row[figure]
    return None


def ratio_target(label, ours, base, workload, figure, limit):
    """A target on ours / base of one figure; None when either is missing."""
    def check(rows):
        a, b = pick(rows, ours, workload, figure), pick(rows, base, workload, figure)
        if a is None or b is None or not b:
            return None
        return f"{a / b:.2f}x ({fmt(a)} / {fmt(b)})", f"<= {limit}x", a / b <= limit
    return label, check


def bound_target(label, impl, workload, figure, limit, offset=0.0):
    """A target on one absolute figure (minus `offset`, e.g. a payload not to count)."""
    def check(rows):
        a = pick(rows, impl, workload, figure)
        if a is None:
            return None
        return fmt(a - offset), f"<= {fmt(limit)}", a - offset <= limit
    return label, check


def least_target(label, impl, workload, figure, least):
    """A target on one absolute figure that must reach `least` (a throughput)."""
    def check(rows):
        a = pick(rows, impl, workload, figure)
        if a is None:
            return None
        return fmt(a), f">= {fmt(least)}", a >= least
    return label, check


def export_pause(label, impl, limit_ms):
    """W10: the longest add during an export, as a ratio of the time the same timers took to
    add in the same run, held to an absolute bound in ms."""
    def check(rows):
        blocked, adds = (pick(rows, impl, "W10", f) for f in ("blocked_max_ms", "add_all_ms"))
        if blocked is None or not adds:
            return None
        return (f"{blocked / adds:.2f}x the adds ({fmt(blocked)} / {fmt(adds)} ms)",
                f"<= {fmt(limit_ms)} ms", blocked <= limit_ms)
    return label, check


def all_fired(label, impl):
    def check(rows):
        fired, n = pick(rows, impl, "W3", "fired"), pick(rows, impl, "W3", "n")
        if fired is None or n is None:
            return None
        return f"{fmt(fired)} of {fmt(n)}", "all", fired == n
    return label, check


def mt_throughput(label, impl, least):
    """W5: the add throughput of two threads at once over one thread's (W1), at least."""
    def check(rows):
        mt, single = pick(rows, impl, "W5", "mt_add_ns"), pick(rows, impl, "W1", "add_ns")
        if mt is None or single is None or not mt:
            return None
        return (f"{single / mt:.2f}x ({fmt(single)} / {fmt(mt)} ns)", f">= {least}x",
                single / mt >= least)
    return label, check


def drain_vs_ideal(case, limit):
    """A W7 burst: its ratio of drain time to ideal, shown with both times."""
    impl = f"timerwheel-{case}"

    def check(rows):
        ratio, drain, ideal = (pick(rows, impl, "W7", f) for f in ("ratio", "drain_s", "ideal_s"))
        if None in (ratio, drain, ideal):
            return None
        return f"{ratio:.2f}x ({fmt(drain)} s / {fmt(ideal)} s)", f"<= {limit}x", ratio <= limit
    return f"W7 burst {case}: drain / ideal", check


def add_cancel_at_baseline_size(label, ours, base, limit):
    """(add + cancel) of ours / of base in W1, at the baseline's n."""
    def check(rows):
        n = pick(rows, base, "W1", "n")
        a = [pick(rows, ours, "W1", f, n) for f in ("add_ns", "cancel_ns")]
        b = [pick(rows, base, "W1", f) for f in ("add_ns", "cancel_ns")]
        if None in a or None in b:
            return None
        return (f"{sum(a) / sum(b):.2f}x ({fmt(sum(a))} / {fmt(sum(b))} ns, n={fmt(n)})",
                f"<= {limit}x", sum(a) / sum(b) <= limit)
    return label, check


TARGETS = {
    "bench-rust": [
        ratio_target("W1 add vs bare heap", "timerwheel-wheel", "binaryheap-lazy", "W1",
                     "add_ns", 1.0),
        ratio_target("W1 whole (add, delete, advance) vs bare heap", "timerwheel-wheel",
                     "binaryheap-lazy", "W1", "total_ns", 0.5),
        bound_target("W1 core bytes per pending timer (8 B payload excluded)",
                     "timerwheel-wheel", "W1", "bytes_per_timer", 48, offset=8.0),
        ratio_target("W2 touch (reset) vs heap delete + add", "timerwheel-wheel",
                     "binaryheap-lazy", "W2", "touch_ns", 0.15),
    ],
    "bench-runtime": [
        ratio_target("W1 add vs same-shape heap timer", "timerwheel-rust", "heap-timer", "W1",
                     "add_ns", 0.6),
        ratio_target("W1 delete vs same-shape heap timer", "timerwheel-rust", "heap-timer",
                     "W1", "cancel_ns", 1.0),
        ratio_target("W2 touch (reset) vs heap delete + add", "timerwheel-rust", "heap-timer",
                     "W2", "touch_ns", 0.15),
        all_fired("W3 every timer fired", "timerwheel-rust"),
        bound_target("W3 late p50 (us) at a 1 ms tick", "timerwheel-rust", "W3", "late_p50_us",
                     300),
        bound_target("W3 late p99 (us) at a 1 ms tick", "timerwheel-rust", "W3", "late_p99_us",
                     1500),
        bound_target("W4 idle CPU (%)", "timerwheel-rust", "W4", "idle_cpu_pct", 0.01),
        mt_throughput("W5 add on 2 threads, no collapse", "timerwheel-rust", 1.0),
        mt_throughput("W5 add throughput, 2 threads vs 1", "timerwheel-rust", 1.5),
        ratio_target("W6 drain, adaptive vs 1 fixed worker", "timerwheel-adaptive",
                     "timerwheel-fixed1", "W6", "drain_s", 0.25),
        bound_target("W6 workers after the idle (min 1)", "timerwheel-adaptive", "W6",
                     "workers_after_idle", 1),
        *[drain_vs_ideal(case, 1.3) for case in ("64x50ms-max16", "256x20ms-max16",
                                                  "33x100ms-max4")],
        bound_target("W8 instant callbacks beside slow ones: late p99 (us)", "timerwheel-mixed",
                     "W8", "late_p99_us", 2000),
        bound_target("W8 instant callbacks beside slow ones: late max (us)", "timerwheel-mixed",
                     "W8", "late_max_us", 20000),
    ],
    "bench-c": [
        ratio_target("W1 add vs libuv", "timerwheel-c", "libuv", "W1", "add_ns", 0.3),
        ratio_target("W1 delete vs libuv", "timerwheel-c", "libuv", "W1", "cancel_ns", 0.15),
        bound_target("W1 bytes per timer, C payload included", "timerwheel-c", "W1",
                     "bytes_per_timer", 56),
        ratio_target("W1 add vs the Rust API", "timerwheel-c", "timerwheel-rust", "W1",
                     "add_ns", 1.3),
        ratio_target("W1 delete vs the Rust API", "timerwheel-c", "timerwheel-rust", "W1",
                     "cancel_ns", 1.3),
        ratio_target("W1 add vs timeout.c (TIMEOUT_C=dir)", "timerwheel-c", "timeout.c", "W1",
                     "add_ns", 1.5),
        ratio_target("W1 delete vs timeout.c", "timerwheel-c", "timeout.c", "W1", "cancel_ns",
                     2.0),
        ratio_target("W2 touch vs timeout.c", "timerwheel-c", "timeout.c", "W2", "touch_ns",
                     1.5),
        all_fired("W3 every timer fired", "timerwheel-c"),
        bound_target("W3 late p50 (us) at a 1 ms tick", "timerwheel-c", "W3", "late_p50_us",
                     300),
        bound_target("W3 late p99 (us) at a 1 ms tick", "timerwheel-c", "W3", "late_p99_us",
                     1500),
        export_pause("W10 longest add during an export of n timers", "timerwheel-c", 100),
    ],
    "bench-python": [
        add_cancel_at_baseline_size("W1 call_later + cancel vs asyncio",
                                    "timerwheel-python", "asyncio", 0.12),
        all_fired("W3 keeps up: every timer fired (largest n)", "timerwheel-python"),
    ],
    "bench-go": [
        add_cancel_at_baseline_size("W1 AfterFunc + Stop vs time.AfterFunc", "timerwheel-go",
                                    "go-time", 1.2),
        ratio_target("W2 Reset vs time.Timer.Reset", "timerwheel-go", "go-time", "W2",
                     "touch_ns", 1.5),
        all_fired("W3 every timer fired", "timerwheel-go"),
        ratio_target("W3 late p99 vs time.AfterFunc (below it)", "timerwheel-go", "go-time",
                     "W3", "late_p99_us", 1.0),
    ],
    "bench-durable": [
        least_target("D1 async durable changes/s, 4 threads", "timerwheel-sqlite", "D1",
                     "changes_per_s", 100000),
        bound_target("D2 sync durable add p99 (us), 4 threads", "timerwheel-sqlite", "D2",
                     "add_p99_us", 10000),
        least_target("D3 fires acknowledged/s, 100 tokens per commit", "timerwheel-sqlite",
                     "D3", "acked_fires_per_s", 50000),
        bound_target("D4 restore of 1M timers (ms)", "timerwheel-sqlite", "D4", "restore_ms",
                     2000),
    ],
}


def target_table(results):
    lines = ["| interface | target | measured | bound | met |", "|---|---|---|---|---|"]
    for target, (rows, _) in results.items():
        for label, check in TARGETS.get(target, []):
            outcome = check(rows)
            if outcome is None:
                lines.append(f"| {SUITES.get(target, target)} | {label} | not measured | | |")
                continue
            value, bound, met = outcome
            lines.append(f"| {SUITES.get(target, target)} | {label} | {value} | {bound} "
                         f"| {'yes' if met else '**no**'} |")
    return "\n".join(lines)


# ---- the W3 plot ---------------------------------------------------------------------------


def read_histograms(directory):
    """impl -> [(bucket_us, count)] from the w3-<impl>.csv files."""
    histograms = {}
    for path in sorted(directory.glob("w3-*.csv")):
        buckets = []
        for line in path.read_text().splitlines()[1:]:
            bucket, count = line.split(",")
            buckets.append((int(bucket), int(count)))
        if buckets:
            histograms[path.stem[3:]] = buckets
    return histograms


def plot_w3(histograms, baselines, png):
    """Cumulative share of timers against lateness (log scale); returns a note for the report."""
    if not histograms:
        return "no W3 histogram was written: plot skipped."
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (`make bench` installs it in .venv-bench): plot skipped."
    fig, (cdf, tail) = plt.subplots(1, 2, figsize=(11, 4.5))
    for impl, buckets in histograms.items():
        total = sum(count for _, count in buckets)
        xs, fired, later, seen = [], [], [], 0
        for bucket, count in buckets:
            seen += count
            xs.append((bucket + 10) / 1000.0)  # the bucket's upper bound, ms
            fired.append(100.0 * seen / total)
            later.append(max(100.0 * (total - seen) / total, 1e-4))
        baseline = any(impl == b or impl.startswith(b + "-n") for b in baselines)
        style = "--" if baseline else "-"
        cdf.step(xs, fired, style, where="post", label=impl, linewidth=1.6)
        tail.step(xs, later, style, where="post", label=impl, linewidth=1.6)
    for ax in (cdf, tail):
        ax.axvline(1.5, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xscale("log")
        ax.set_xlabel("lateness (callback start minus deadline), ms")
        ax.grid(True, which="both", linewidth=0.3)
    cdf.set_ylabel("timers fired by then, %")
    cdf.set_ylim(0, 101)
    cdf.set_title("W3: share fired by a given lateness")
    cdf.legend(loc="upper left", fontsize=8)
    tail.set_yscale("log")
    tail.set_ylim(1e-4, 101)
    tail.axhline(1, color="grey", linewidth=0.8, linestyle=":")
    tail.text(1.6, 1.3, "p99 target: 1.5 ms", color="grey", fontsize=8)
    tail.set_ylabel("timers later than that, % (log)")
    tail.set_title("The tail: share still waiting")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    return f"![W3 lateness]({png.name})"


# ---- the report ----------------------------------------------------------------------------


def write_report(path, info, results, plot_note, quick, skipped):
    out = ["# Benchmark report", "",
           "Generated by `make bench` (bench/report.py); workloads W1-W8 of docs/benchmarks.md. "
           "Every ratio is timerwheel / baseline measured in the same run; lower is better. "
           "Absolute times move with the load of the machine, ratios hold better.", "",
           "## Machine", "",
           f"- date: {info['date']}",
           f"- CPUs (nproc): {info['nproc']}, model: {info['cpu']}",
           f"- kernel: {info['kernel']}",
           f"- load average at start: {info['load']}; at the end: {info['load_end']}",
           f"- run: {'quick (BENCH_QUICK=1: a tenth of the sizes)' if quick else 'full sizes'}",
           "", "## Targets", "", target_table(results), ""]
    for target, (rows, note) in results.items():
        out += [f"## {SUITES.get(target, target)} (`make {target}`)", "", f"{note}.", ""]
        out += [suite_table(rows) if rows else "No figures were printed.", ""]
    for target, why in skipped:
        out += [f"## {SUITES.get(target, target)}", "", f"Skipped: {why}.", ""]
    out += ["## W3 lateness distribution", "",
            "Share of the W3 timers that had fired by a given lateness (solid: timerwheel, "
            "dashed: baselines). W3 runs three times per implementation and each bench "
            "reports its run with the median p99; the Rust and C benches draw that run, Go "
            "draws its last run, so a Go curve and its table row can differ.", "", plot_note, ""]
    path.write_text("\n".join(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", required=True, help="make targets that run benches")
    parser.add_argument("--quick", action="store_true", help="short runs (BENCH_ARGS=--quick)")
    parser.add_argument("--report", default=str(ROOT / "bench" / "report.md"))
    parser.add_argument("--plot", default=str(ROOT / "bench" / "w3_lateness.png"))
    args = parser.parse_args()
    info = machine()
    log_dir = OUT / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    log_dir.mkdir(parents=True, exist_ok=True)
    targets = args.targets.split()
    results = {t: run_target(t, args.quick, log_dir) for t in targets}
    skipped = [(t, "this interface has no bench target in this checkout")
               for t in SUITES if t not in targets]
    info["load_end"] = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    baselines = {r["impl"] for rows, _ in results.values() for r in rows if r.get("baseline")}
    plot_note = plot_w3(read_histograms(log_dir), baselines, Path(args.plot))
    write_report(Path(args.report), info, results, plot_note, args.quick, skipped)
    print(f"\nwrote {args.report} (logs and histograms in {log_dir})")


if __name__ == "__main__":
    main()
