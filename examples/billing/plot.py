"""The billing demo's picture: lateness, workers and backlog over the run, from the CSV of
each second the demo writes with --csv.

    python examples/billing/plot.py build/demo/billing.csv build/demo/billing.png

Needs matplotlib (in .venv-bench, which `make demo` uses when it exists)."""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot: {path} has no rows")
    return {key: [float(row[key]) for row in rows] for key in rows[0]}


def plot(columns, out):
    t = columns["time_s"]
    fig, (late, workers, backlog) = plt.subplots(3, 1, sharex=True, figsize=(9, 7))
    late.plot(t, columns["late_p50_ms"], label="p50, last second")
    late.plot(t, columns["late_p99_ms"], label="p99, last second")
    late.plot(t, columns["late_max_ms"], label="max, last second", linewidth=0.8)
    late.plot(t, columns["late_p99_minute_ms"], label="p99, last minute", linestyle="--")
    late.set_ylabel("lateness (ms)")
    late.set_yscale("symlog", linthresh=0.1)
    late.legend(fontsize="small", loc="upper right")
    workers.step(t, columns["workers"], where="post", color="tab:green")
    workers.set_ylabel("worker threads")
    backlog.step(t, columns["backlog"], where="post", color="tab:red")
    backlog.set_ylabel("backlog at each line\n(due, not started)")
    backlog.set_ylim(bottom=0, top=max(1.0, *columns["backlog"]) * 1.1)
    workers.set_ylim(bottom=0)
    backlog.set_xlabel("seconds since the start of the run")
    for axis in (late, workers, backlog):
        axis.grid(alpha=0.3)
    fig.suptitle("billing demo: one point a second")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py FIGURES.csv OUT.png")
    plot(read(sys.argv[1]), sys.argv[2])
    print(f"picture of the run: {sys.argv[2]}")
