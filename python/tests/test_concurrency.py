"""Threads: periodic runs never overlap, callbacks calling back into the wheel, closing
while callbacks run, many threads adding at once, and the GIL never held while waiting."""

import random
import sys
import threading
import time

from timerwheel import Wheel

from conftest import quiet_invariant, wait_until


def test_periodic_runs_never_overlap():
    with Wheel(min_workers=4, max_workers=4) as w:
        lock = threading.Lock()
        running = [0]
        most = [0]
        runs = [0]

        def slow():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.02)  # longer than the period
            with lock:
                running[0] -= 1
                runs[0] += 1

        timer = w.call_every(0.002, slow)
        wait_until(lambda: runs[0] >= 10)
        assert timer.cancel_sync()
        assert most[0] == 1


def test_periodic_timer_cancelling_itself_returns_true(wheel):
    results = []
    timers = []

    def tick():
        if len(results) == 0 and len(timers) == 1:
            results.append(timers[0].cancel())

    timers.append(wheel.call_every(0.005, tick))
    wait_until(lambda: results)
    assert results == [True]
    wait_until(lambda: wheel.stats()["pending"] == 0)
    assert not timers[0].active


def test_one_shot_cancelling_itself_returns_false(wheel):
    results = []
    timers = []
    done = threading.Event()

    def once():
        results.append(timers[0].cancel())
        done.set()

    timers.append(wheel.call_later(0.02, once))
    assert done.wait(10)
    assert results == [False]


def test_callbacks_may_call_back_into_the_wheel(wheel):
    done = threading.Event()
    victim = wheel.call_later(60, print)
    steps = []

    def first():
        steps.append(victim.cancel())
        # Due only through the reset: with 10 ms, a stall of this callback's thread let
        # it fire before the reset, which was then false.
        later = wheel.call_later(60, second)
        steps.append(later.reset(0.02))
        steps.append(wheel.stats()["added"])

    def second():
        steps.append("second")
        done.set()

    wheel.call_later(0.01, first)
    assert done.wait(10)
    assert steps == [True, True, 3, "second"]


def test_close_waits_for_running_callbacks_and_none_starts_after():
    w = Wheel(min_workers=2, max_workers=2)
    started = threading.Event()
    finished = []
    starts = []
    lock = threading.Lock()

    def slow():
        started.set()
        time.sleep(0.3)
        finished.append(time.monotonic())

    def quick():
        with lock:
            starts.append(time.monotonic())

    w.call_later(0, slow)
    for i in range(500):
        w.call_later(i * 0.001, quick)
    assert started.wait(10)
    w.close()
    closed_at = time.monotonic()
    assert finished and finished[0] <= closed_at
    with lock:
        count = len(starts)
        assert all(t <= closed_at for t in starts)
    time.sleep(0.2)
    assert len(starts) == count
    stats = w.stats()
    assert stats["pending"] == 0
    assert quiet_invariant(stats)


def test_close_does_not_hold_the_gil_while_a_callback_needs_it():
    w = Wheel()
    started = threading.Event()
    spins = [0]

    def busy_python():
        started.set()
        end = time.monotonic() + 0.3
        while time.monotonic() < end:  # pure Python: needs the GIL throughout
            spins[0] += 1

    w.call_later(0, busy_python)
    assert started.wait(10)
    closer = threading.Thread(target=w.close)
    closer.start()
    closer.join(10)
    assert not closer.is_alive(), "close() deadlocked"
    assert spins[0] > 0


def test_threads_adding_concurrently_keep_the_counts():
    with Wheel(max_workers=4) as w:
        fired = [0]
        lock = threading.Lock()

        def count():
            with lock:
                fired[0] += 1

        def worker(seed):
            rng = random.Random(seed)
            timers = [w.call_later(rng.uniform(0, 0.2), count) for _ in range(2000)]
            cancelled = sum(t.cancel() for t in timers[::2])
            return cancelled

        results = []
        threads = [
            threading.Thread(target=lambda s=s: results.append(worker(s))) for s in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(results) == 4
        wait_until(lambda: w.stats()["pending"] == 0)
        stats = w.stats()
        assert stats["added"] == 8000
        assert stats["cancelled"] == sum(results)
        wait_until(lambda: fired[0] == 8000 - sum(results))
        assert stats["fired_one_shot"] == fired[0]
        assert quiet_invariant(stats)


def test_workers_grow_for_blocking_callbacks_and_retire_when_idle():
    with Wheel(min_workers=1, max_workers=4, worker_keepalive=0.05) as w:
        done = []

        def blocking():
            time.sleep(0.02)  # releases the GIL, as I/O would
            done.append(1)

        for _ in range(40):
            w.call_later(0, blocking)
        wait_until(lambda: len(done) == 40)
        assert w.stats()["workers_peak"] > 1
        wait_until(lambda: w.stats()["workers_retired"] > 0 and w.stats()["workers"] == 1)
        again = threading.Event()
        w.call_later(0, again.set)
        assert again.wait(10)


def test_cancel_sync_does_not_hold_the_gil_while_it_waits(wheel):
    started = threading.Event()
    finished = []

    def busy_python():
        started.set()
        end = time.monotonic() + 0.3
        while time.monotonic() < end:  # pure Python: needs the GIL throughout
            pass
        finished.append(time.monotonic())

    timer = wheel.call_every(0.001, busy_python)
    assert started.wait(10)
    results = []
    canceller = threading.Thread(target=lambda: results.append(timer.cancel_sync()))
    canceller.start()
    canceller.join(10)
    assert not canceller.is_alive(), "cancel_sync() deadlocked"
    assert results == [True]
    count = len(finished)
    assert count >= 1  # it returned only after the run under way had finished
    time.sleep(0.05)
    assert len(finished) == count


class Hit:
    """A timer's callable, kept alive by the test too (so a cancel need not free it)."""

    def __init__(self, index, ran):
        self.index = index
        self.ran = ran

    def __call__(self):
        self.ran.append(self.index)


def test_cancels_racing_fires_from_many_threads_take_each_timer_once():
    # Timers coming due while four threads cancel all of them, each in its own order:
    # every timer either ran or had exactly one cancel return True, never both, and every
    # callable is back to the references it had before (none kept, none released twice).
    n = 4000
    with Wheel(min_workers=2, max_workers=2) as w:
        ran = []
        hits = [Hit(i, ran) for i in range(n)]
        base = [sys.getrefcount(h) for h in hits]
        timers = [w.call_later(i % 40 / 1000, hits[i]) for i in range(n)]
        cancelled = [[] for _ in range(4)]

        def cancel_all(seed, out):
            order = list(range(n))
            random.Random(seed).shuffle(order)
            out.extend(i for i in order if timers[i].cancel())

        threads = [threading.Thread(target=cancel_all, args=(s, cancelled[s])) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wait_until(lambda: len(ran) + sum(map(len, cancelled)) >= n)
        time.sleep(0.1)  # a run or a second True would show up here
    taken = sorted(ran + [i for out in cancelled for i in out])
    assert taken == list(range(n)), "a timer ran and was cancelled, or neither, or twice"
    assert [sys.getrefcount(h) for h in hits] == base
