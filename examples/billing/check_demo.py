"""make test-demo: runs the billing demo briefly with --metrics-port 0 and --csv, as an
operator would watch it, and checks what they would see: the Prometheus endpoint on
127.0.0.1 answers while it runs, the output is a labelled line a second (stdout is not a
terminal here), the CSV has a row a second, and every check of the report passes.

    python3 examples/billing/check_demo.py BILLING_BINARY CSV [demo flags...]
"""

import csv
import re
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


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
