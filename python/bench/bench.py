"""Benchmarks W1, W2, W3 (docs/benchmarks.md) of the timerwheel Python module against
asyncio's loop.call_later / TimerHandle.cancel, side by side in one process.

Prints one JSON object per line, then a table of ratios (timerwheel / asyncio, lower is
better) with the targets. asyncio runs with fewer timers (--asyncio-n, default 200,000),
as it is much slower; each line says its n. Per-operation figures include the Python loop
that drives them, the same for both.

    python bench.py [--n 1000000] [--asyncio-n 200000] [--touches 2000000]

`--w1 ROUNDS` runs only W1 at asyncio's size (--asyncio-n), ROUNDS times each, alternating
timerwheel and asyncio, and prints the call_later + cancel ratio of each round and their
median: the quick check of one figure.
"""

import argparse
import asyncio
import gc
import json
import os
import random
import sys
import time

import timerwheel

SEED = 42
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def noop(*_):
    pass


def emit(impl, workload, n, **figures):
    row = {"impl": impl, "baseline": impl == "asyncio", "workload": workload, "n": n}
    row.update({k: round(v, 1) if isinstance(v, float) else v for k, v in figures.items()})
    print(json.dumps(row), flush=True)
    return row


def percentile(sorted_values, p):
    """The p-th percentile (1 <= p <= 100) of a non-empty sorted list, by nearest rank: the
    value of rank ceil(p/100 * n), counting from 1 (docs/benchmarks.md)."""
    rank = (p * len(sorted_values) + 99) // 100
    return sorted_values[max(rank, 1) - 1]


# ---- W1: add N one-shot timers with delays in [1 s, 3600 s), then cancel all in random order.

def w1_delays(n):
    rng = random.Random(SEED)
    delays = [rng.uniform(1, 3600) for _ in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    return delays, order


def w1(impl, n, schedule, close=lambda: None):
    delays, order = w1_delays(n)
    gc.collect()
    before = rss_bytes()
    start = time.perf_counter()
    timers = [schedule(d, noop) for d in delays]
    added = time.perf_counter()
    grown = rss_bytes() - before
    shuffled = [timers[i] for i in order]
    cancelling = time.perf_counter()
    for timer in shuffled:
        timer.cancel()
    done = time.perf_counter()
    close()
    return emit(
        impl, "W1", n,
        add_ns=(added - start) * 1e9 / n,
        cancel_ns=(done - cancelling) * 1e9 / n,
        bytes_per_timer=grown / n,
    )


# ---- W2: N live 30 s timers; refresh a random one to "30 s from now", `touches` times.

def w2_indices(n, touches):
    rng = random.Random(SEED)
    return [rng.randrange(n) for _ in range(touches)]


def w2_timerwheel(n, touches):
    with timerwheel.Wheel() as wheel:
        timers = [wheel.call_later(30.0, noop) for _ in range(n)]
        indices = w2_indices(n, touches)
        start = time.perf_counter()
        for i in indices:
            timers[i].reset(30.0)
        elapsed = time.perf_counter() - start
    return emit("timerwheel-python", "W2", n, touches=touches, touch_ns=elapsed * 1e9 / touches)


def w2_asyncio(n, touches):
    loop = asyncio.new_event_loop()
    handles = [loop.call_later(30.0, noop) for _ in range(n)]
    indices = w2_indices(n, touches)
    start = time.perf_counter()
    for i in indices:
        handles[i].cancel()
        handles[i] = loop.call_later(30.0, noop)
    elapsed = time.perf_counter() - start
    loop.close()
    return emit("asyncio", "W2", n, touches=touches, touch_ns=elapsed * 1e9 / touches)


# ---- W3: N timers due uniformly over [1 s, 3 s); each callback records its lateness.

def w3_delays(n):
    rng = random.Random(SEED)
    return [rng.uniform(1, 3) for _ in range(n)]


def dump_lateness(impl, n, lateness):
    """With TW_BENCH_DIR set, writes w3-<impl>-n<n>.csv: `bucket_us,count` lines, the lower
    bound of each non-empty 10 us bucket of the sorted lateness (seconds)."""
    directory = os.environ.get("TW_BENCH_DIR")
    if not directory:
        return
    counts = {}
    for late in lateness:
        bucket = max(int(late * 1e5), 0) * 10
        counts[bucket] = counts.get(bucket, 0) + 1
    with open(os.path.join(directory, f"w3-{impl}-n{n}.csv"), "w") as f:
        f.write("bucket_us,count\n")
        f.writelines(f"{bucket},{count}\n" for bucket, count in sorted(counts.items()))


def w3_report(impl, n, lateness, start, end, **extra):
    lateness.sort()
    dump_lateness(impl, n, lateness)
    return emit(
        impl, "W3", n,
        fired=len(lateness),
        total_s=end - start,
        late_p50_us=percentile(lateness, 50) * 1e6,
        late_p99_us=percentile(lateness, 99) * 1e6,
        late_max_us=percentile(lateness, 100) * 1e6,
        **extra,
    )


def w3_timerwheel(n):
    lateness = []
    record = lateness.append
    clock = time.monotonic

    def fired(due):
        record(clock() - due)

    with timerwheel.Wheel() as wheel:
        delays = w3_delays(n)
        start = clock()
        for d in delays:
            wheel.call_later(d, fired, clock() + d)
        while len(lateness) < n and clock() - start < 60:
            time.sleep(0.01)
        end = clock()
        stats = wheel.stats()
    return w3_report(
        "timerwheel-python", n, lateness, start, end,
        core_late_p99_us=stats["late_p99_us"], workers_peak=stats["workers_peak"],
    )


def w3_asyncio(n):
    lateness = []
    loop = asyncio.new_event_loop()
    clock = loop.time

    def fired(due):
        lateness.append(clock() - due)
        if len(lateness) == n:
            loop.stop()

    delays = w3_delays(n)
    start = clock()
    for d in delays:
        loop.call_later(d, fired, clock() + d)
    loop.run_forever()
    end = clock()
    loop.close()
    return w3_report("asyncio", n, lateness, start, end)


# ---- W1 alone, in rounds (--w1).

def w1_rounds(n, rounds):
    ratios = []
    for _ in range(rounds):
        wheel = timerwheel.Wheel()
        ours = w1("timerwheel-python", n, wheel.call_later, wheel.close)
        loop = asyncio.new_event_loop()
        base = w1("asyncio", n, loop.call_later, loop.close)
        ratio = (ours["add_ns"] + ours["cancel_ns"]) / (base["add_ns"] + base["cancel_ns"])
        ratios.append(ratio)
        print(f"W1 call_later+cancel ratio (n={n:,} both): {ratio:.3f}", flush=True)
    ratios.sort()
    print(f"median of {rounds}: {ratios[len(ratios) // 2]:.3f}  target <= 0.12")


# ---- The table.

def table(rows, n, an):
    by = {(r["impl"], r["workload"], r["n"]): r for r in rows}
    tw = lambda w, size=n: by[("timerwheel-python", w, size)]
    aio = lambda w: by[("asyncio", w, an)]
    both = lambda w: by[("timerwheel-python", w, an)]
    w1_sum = lambda row: row["add_ns"] + row["cancel_ns"]
    w3_same = both("W3")
    lines = [
        (f"W1 call_later ns (n={an:,} both)", both("W1")["add_ns"], aio("W1")["add_ns"], ""),
        (f"W1 cancel ns (n={an:,} both)", both("W1")["cancel_ns"], aio("W1")["cancel_ns"], ""),
        (f"W1 call_later+cancel ns (n={an:,} both)", w1_sum(both("W1")), w1_sum(aio("W1")), "<= 0.12"),
        (f"W1 call_later+cancel ns (n={n:,} vs {an:,})", w1_sum(tw("W1")), w1_sum(aio("W1")), ""),
        (f"W1 bytes/timer (n={n:,} vs {an:,})", tw("W1")["bytes_per_timer"], aio("W1")["bytes_per_timer"], ""),
        (f"W2 reset vs cancel+call_later ns (n={an:,} both)", both("W2")["touch_ns"], aio("W2")["touch_ns"], ""),
        (f"W2 touch ns (n={n:,} vs {an:,})", tw("W2")["touch_ns"], aio("W2")["touch_ns"], ""),
        (f"W3 late p50 us (n={an:,} both)", w3_same["late_p50_us"], aio("W3")["late_p50_us"], ""),
        (f"W3 late p99 us (n={an:,} both)", w3_same["late_p99_us"], aio("W3")["late_p99_us"], "keeps up"),
        (f"W3 late max us (n={an:,} both)", w3_same["late_max_us"], aio("W3")["late_max_us"], ""),
        (f"W3 late p99 us (n={n:,} vs {an:,})", tw("W3")["late_p99_us"], aio("W3")["late_p99_us"], ""),
    ]
    print()
    print(f"{'metric':48} {'timerwheel':>12} {'asyncio':>12} {'ratio':>7}  target")
    for name, ours, base, target in lines:
        ratio = ours / base if base else float("nan")
        print(f"{name:48} {ours:12.1f} {base:12.1f} {ratio:7.3f}  {target}")
    print(
        f"\nasyncio runs with n={an:,} (reduced from {n:,}: it is much slower). W2: "
        f"{tw('W2')['touches']:,} resets over {n:,} timers vs {aio('W2')['touches']:,} "
        f"cancel+call_later over {an:,}. W3 fired: {tw('W3')['fired']:,} of {n:,}, "
        f"{w3_same['fired']:,} of {an:,}, asyncio {aio('W3')['fired']:,} of {an:,}. Lateness "
        f"is measured in the callback (time.monotonic() minus its deadline); the core's own "
        f"p99 (deadline to callback start) was {tw('W3')['core_late_p99_us']} us at n={n:,}."
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--asyncio-n", type=int, default=200_000)
    parser.add_argument("--touches", type=int, default=2_000_000)
    parser.add_argument("--w1", type=int, metavar="ROUNDS", help="only W1, ROUNDS times")
    args = parser.parse_args()
    n, an = args.n, args.asyncio_n
    if args.w1:
        return w1_rounds(an, args.w1)
    rows = []

    for size in (n, an):
        wheel = timerwheel.Wheel()
        rows.append(w1("timerwheel-python", size, wheel.call_later, wheel.close))
    loop = asyncio.new_event_loop()
    rows.append(w1("asyncio", an, loop.call_later, loop.close))
    rows.append(w2_timerwheel(n, args.touches))
    rows.append(w2_timerwheel(an, an))
    rows.append(w2_asyncio(an, an))
    rows.append(w3_timerwheel(n))
    rows.append(w3_timerwheel(an))
    rows.append(w3_asyncio(an))
    table(rows, n, an)


if __name__ == "__main__":
    sys.exit(main())
