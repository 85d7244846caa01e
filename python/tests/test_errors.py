"""Bad input, capacity, exceptions in callbacks and calls that would wait for themselves."""

import math
import sys
import threading

import pytest

from timerwheel import (
    TimerwheelBusyError,
    TimerwheelClosedError,
    TimerwheelError,
    TimerwheelFullError,
    Wheel,
)

from conftest import wait_until

BAD_DELAYS = [-1, -0.001, -1e-30, math.nan, math.inf, 1e30]


@pytest.mark.parametrize("delay", BAD_DELAYS)
def test_bad_delay_is_a_value_error(wheel, delay):
    with pytest.raises(ValueError, match="delay"):
        wheel.call_later(delay, print)
    timer = wheel.call_later(60, print)
    with pytest.raises(ValueError, match="delay"):
        timer.reset(delay)
    assert timer.active
    assert wheel.stats()["added"] == 1


@pytest.mark.parametrize("period", [0, -1, math.nan])
def test_bad_period_is_a_value_error(wheel, period):
    with pytest.raises(ValueError, match="period"):
        wheel.call_every(period, print)


def test_bad_first_and_when_are_value_errors(wheel):
    with pytest.raises(ValueError, match="first"):
        wheel.call_every(1, print, first=-1)
    with pytest.raises(ValueError, match="when"):
        wheel.call_at(math.nan, print)


def test_non_callable_is_a_type_error(wheel):
    with pytest.raises(TypeError, match="callable.*int"):
        wheel.call_later(1, 42)
    with pytest.raises(TypeError):
        wheel.call_every(1, "print")
    assert wheel.stats()["added"] == 0


def test_non_number_delay_is_a_type_error(wheel):
    with pytest.raises(TypeError):
        wheel.call_later("1", print)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"tick": 0}, "tick"),
        ({"tick": 2}, "tick"),
        ({"tick": -1}, "tick"),
        ({"min_workers": -1}, "min_workers"),
        ({"min_workers": 4, "max_workers": 2}, "min_workers"),
        ({"max_workers": 5000}, "max_workers"),
        ({"worker_keepalive": math.nan}, "worker_keepalive"),
        ({"max_timers": -5}, "max_timers"),
    ],
)
def test_bad_config_is_a_value_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Wheel(**kwargs)


def test_bad_config_names_the_range_the_library_checks():
    with pytest.raises(ValueError, match=r"^tick 50µs is out of range: "):
        Wheel(tick=0.00005)
    with pytest.raises(ValueError, match=r"^min_workers 4 is out of range: "):
        Wheel(min_workers=4, max_workers=2)


def test_capacity_gives_a_timerwheel_error():
    with Wheel(max_timers=3) as w:
        timers = [w.call_later(60, print) for _ in range(3)]
        with pytest.raises(TimerwheelFullError, match="max_timers=3"):
            w.call_later(60, print)
        assert timers[0].cancel()
        w.call_later(60, print)
        assert w.stats()["pending"] == 3


def test_exception_hierarchy():
    assert issubclass(TimerwheelFullError, TimerwheelError)
    assert issubclass(TimerwheelClosedError, RuntimeError)
    assert issubclass(TimerwheelBusyError, RuntimeError)


def test_exception_in_callback_goes_to_unraisablehook(wheel, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)

    def fails():
        raise ValueError("boom")

    wheel.call_later(0, fails)
    wait_until(lambda: wheel.stats()["callback_panics"] == 1)
    wait_until(lambda: seen)
    assert seen[0].exc_type is ValueError
    assert str(seen[0].exc_value) == "boom"
    assert seen[0].object is fails
    # The wheel goes on.
    done = threading.Event()
    wheel.call_later(0, done.set)
    assert done.wait(10)


def test_periodic_timer_that_raises_keeps_running(wheel, monkeypatch):
    monkeypatch.setattr(sys, "unraisablehook", lambda _: None)
    timer = wheel.call_every(0.005, lambda: 1 / 0)
    wait_until(lambda: wheel.stats()["callback_panics"] >= 3)
    assert timer.cancel()


def test_close_from_own_callback_is_busy(wheel):
    errors = []
    done = threading.Event()

    def closes():
        try:
            wheel.close()
        except TimerwheelBusyError as err:
            errors.append(err)
        done.set()

    wheel.call_later(0, closes)
    assert done.wait(10)
    assert len(errors) == 1 and "own callbacks" in str(errors[0])
    assert not wheel.closed


def test_cancel_sync_from_own_callback_is_busy(wheel):
    errors = []
    done = threading.Event()
    timers = []

    def cancels_itself():
        try:
            timers[0].cancel_sync()
        except TimerwheelBusyError as err:
            errors.append(err)
        done.set()

    timers.append(wheel.call_every(0.005, cancels_itself))
    assert done.wait(10)
    assert errors
    assert timers[0].cancel()
