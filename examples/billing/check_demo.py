"""make test-demo: runs the billing demo briefly with --metrics-port 0 and --csv, as an
operator would watch it, and checks what they would see: the Prometheus endpoint on
127.0.0.1 answers while it runs, the output is a labelled line a second (stdout is not a
terminal here), the CSV has a row a second, and every check of the report passes.

    python3 examples/billing/check_demo.py BILLING_BINARY CSV [demo flags...]

With --durable it runs the demo with --durable DB --crash-at S (killed once at a random
moment, started again from its files) and checks the accounts in the ledger afterwards:
every charging point that fell due before a session's end is charged exactly once, no
charge after it or beyond the credit, every session ended, no idle timeout lost.

    python3 examples/billing/check_demo.py --durable BILLING_BINARY DB CRASH_S [flags...]
"""

import csv
import os
import re
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request


def fail(message, output=""):
    sys.exit(f"check_demo: {message}\n{output}")


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.headers.get("Content-Type", ""), response.read().decode()


def check_endpoint(url):
    """The metrics, and a 404 for another path."""
    content_type, body = fetch(url)
    if not content_type.startswith("text/plain; version=0.0.4"):
        fail(f"content type {content_type!r}")
    for wanted in ("# TYPE timerwheel_lateness_seconds histogram",
                   'timerwheel_lateness_seconds_bucket{le="+Inf"}',
                   "timerwheel_timers_fired_total", "timerwheel_backlog"):
        if wanted not in body:
            fail(f"{url} gave no {wanted!r}", body)
    fired = float(re.search(r"^timerwheel_timers_fired_total (\S+)$", body, re.M).group(1))
    if fired <= 0:
        fail("no callback counted by the time of the first line", body)
    try:
        fetch(url.replace("/metrics", "/other"))
        fail("another path was answered")
    except urllib.error.HTTPError as error:
        if error.code != 404:
            fail(f"another path gave {error.code}")


def main(binary, csv_path, flags):
    demo = subprocess.Popen([binary, "--metrics-port", "0", "--csv", csv_path, *flags],
                            stdout=subprocess.PIPE, text=True)
    lines, url, fetched = [], None, False
    for line in demo.stdout:
        sys.stdout.write(line)
        lines.append(line)
        if line.startswith("metrics: "):
            url = line.split()[1]
        elif re.match(r"\s+\d+\.\ds ", line) and url is not None and not fetched:
            check_endpoint(url)  # while it runs, after its first second
            fetched = True
            print(f"check_demo: {url} answered while the demo ran")
    output = "".join(lines)
    if demo.wait() != 0:
        fail(f"the demo exited with {demo.returncode}", output)
    if not fetched:
        fail("no metrics line before the figures", output)
    if "\r" in output or "\033" in output:
        fail("lines redrawn in place although stdout is not a terminal", output)
    for label in ("per second", "since start", "now", "last 1 s", "last minute"):
        if label not in output:
            fail(f"no column group {label!r}", output)
    seconds = [line for line in lines if re.match(r"\s+\d+\.\ds ", line)]
    if len(seconds) < 2:
        fail("fewer than two lines of figures", output)
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != len(seconds) or float(rows[-1]["credit_used"]) <= 0:
        fail(f"{len(rows)} CSV rows for {len(seconds)} lines", output)
    print(f"check_demo: {len(seconds)} labelled lines, {len(rows)} CSV rows, report passed")


LIVE, HANGUP, IDLE, EXHAUSTED, CLOSED = range(5)


def flag(flags, name, default):
    return float(flags[flags.index(name) + 1]) if name in flags else default


def session_faults(s, charged, idle_tokens, period):
    """What is wrong with one session's account; charged: the occurrences it paid for."""
    start, end, credit = s["start_ms"], s["end_ms"], s["credit"]
    points = (end - start) // period  # charging points start + k * period <= end, k >= 1
    due = min(credit, max(points, 0))
    grid = [start + k * period for k in range(1, due + 1)]
    faults = []
    if s["reason"] == LIVE:
        faults.append("never ended")
    if charged != grid:
        missing = sorted(set(grid) - set(charged))[:3]
        extra = sorted(set(charged) - set(grid))[:3]
        faults.append(f"{len(charged)} charges for {due} due (missing {missing}, extra {extra})")
    if s["charges"] != len(charged) or s["balance"] != credit - len(charged):
        faults.append(f"account says {s['charges']} charges, balance {s['balance']}")
    if s["reason"] == EXHAUSTED and len(charged) != credit:
        faults.append(f"ended by exhaustion with {len(charged)} of {credit} charged")
    if s["reason"] == IDLE and not idle_tokens:
        faults.append("ended by its idle timeout, which the ledger does not hold")
    if s["idle_missing"] and not idle_tokens:
        faults.append("its idle timeout was gone from the store and never fired: lost")
    return faults


def check_ledger(path, period):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    sessions = db.execute("SELECT * FROM sessions").fetchall()
    charged, idle = {}, {}
    for key, name, occurrence, effect in db.execute(
            "SELECT key, name, occurrence, effect FROM ledger ORDER BY occurrence"):
        if name == "charge" and effect:
            charged.setdefault(key, []).append(occurrence)
        elif name == "idle":
            idle.setdefault(key, []).append(occurrence)
    lost = db.execute("SELECT value FROM meta WHERE key = 'charging_timers_lost'").fetchone()
    faults = [] if lost is None or lost[0] == 0 else [f"{lost[0]} charging timers lost"]
    for s in sessions:
        for fault in session_faults(s, charged.get(s["key"], []), idle.get(s["key"]), period):
            faults.append(f"session {s['session']}: {fault}")
    if faults:
        fail(f"{len(faults)} faults in the ledger", "\n".join(faults[:20]))
    total = sum(len(v) for v in charged.values())
    print(f"check_demo: {len(sessions)} sessions, {total} charges, each due point charged"
          " exactly once, every session ended, no idle timeout lost")


def main_durable(binary, db, crash_s, flags):
    for suffix in ("", "-wal", "-shm", ".ledger", ".ledger-wal", ".ledger-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    demo = subprocess.run([binary, "--durable", db, "--crash-at", crash_s, *flags],
                          stdout=subprocess.PIPE, text=True)
    sys.stdout.write(demo.stdout)
    if demo.returncode != 0:
        fail(f"the demo exited with {demo.returncode}", demo.stdout)
    if "killed (SIGKILL)" not in demo.stdout or "picked up the run" not in demo.stdout:
        fail("the run was not killed and picked up again", demo.stdout)
    check_ledger(db + ".ledger", int(flag(flags, "--period", 1000)))


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "--durable":
        main_durable(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif len(sys.argv) >= 3:
        main(sys.argv[1], sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
