"""Manual mode: no threads, the caller runs due callbacks with poll(). Deterministic."""

import time

import pytest

from timerwheel import Wheel

from conftest import quiet_invariant


def test_poll_runs_due_callbacks_on_the_calling_thread(manual):
    ran = []
    manual.call_later(0.02, ran.append, "a")
    manual.call_later(3600, ran.append, "never")
    assert manual.poll() == 0
    timeout = manual.next_timeout()
    assert 0 < timeout <= 0.021
    time.sleep(timeout + 0.005)
    assert manual.poll() == 1
    assert ran == ["a"]
    assert manual.next_timeout() > 3000


def test_next_timeout_is_none_when_idle(manual):
    assert manual.next_timeout() is None


def test_periodic_in_manual_mode(manual):
    runs = []
    timer = manual.call_every(0.005, runs.append, 1)
    for _ in range(3):
        time.sleep(0.006)
        manual.poll()
    assert len(runs) >= 2
    assert timer.cancel()
    assert manual.next_timeout() is None


def test_stats_invariant_in_manual_mode(manual):
    timers = [manual.call_later(0.001 * (i % 5), print) for i in range(100)]
    for timer in timers[::3]:
        timer.cancel()
    stats = manual.stats()
    assert quiet_invariant(stats) and stats["cancelled"] == 34
    assert stats["workers"] == 0


def test_exception_in_poll_is_counted(manual, monkeypatch):
    import sys

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    manual.call_later(0, lambda: 1 / 0)
    time.sleep(0.002)
    assert manual.poll() == 1
    assert manual.stats()["callback_panics"] == 1
    assert seen[0].exc_type is ZeroDivisionError


def test_poll_needs_manual_mode(wheel):
    with pytest.raises(RuntimeError, match="manual"):
        wheel.poll()


def test_due_timer_not_yet_started_is_still_cancelled(manual):
    ran = []
    timer = manual.call_later(0, ran.append, 1)
    time.sleep(0.005)
    assert manual.next_timeout() == 0.0
    assert timer.cancel()
    assert manual.poll() == 0
    assert ran == []


def test_reset_of_a_periodic_timer_moves_its_next_run(manual):
    runs = []
    timer = manual.call_every(0.005, runs.append, 1)
    assert timer.reset(3600)
    time.sleep(0.01)
    assert manual.poll() == 0
    assert manual.next_timeout() > 3000
    assert timer.active and runs == []
