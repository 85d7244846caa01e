"""Timers that survive a restart: export() and call_every_at(), on the virtual clock, so
every value is exact."""

import time

import pytest

from timerwheel import PendingTimer, Wheel

START = 1_704_067_200  # 2024-01-01T00:00:00Z
MINUTE = 60


def noop(*args, **kwargs):
    pass


class Runs:
    """A callback that records the virtual seconds since START of each of its runs."""

    def __init__(self, wheel):
        self.wheel = wheel
        self.at = []

    def __call__(self):
        self.at.append(round(self.wheel.now() - START, 6))


def test_export_gives_each_pending_timer_with_its_schedule_and_call():
    with Wheel(virtual_clock=START) as wheel:
        once = wheel.call_later(5, noop, 1, 2, unit="EUR")
        charge = wheel.call_every(MINUTE, noop)
        idle = wheel.call_every(10, noop, fixed_delay=True, first=3)
        close = wheel.call_at(START + 100, print, "closed")
        wheel.call_later(7, noop).cancel()
        wheel.advance(1)

        timers, running = wheel.export()

    assert running == 0
    assert timers == [
        PendingTimer(idle.id, START + 3, 3.0, 10.0, True, None, noop, (), {}),
        PendingTimer(once.id, START + 5, 5.0, None, False, None, noop, (1, 2), {"unit": "EUR"}),
        PendingTimer(charge.id, START + 60, 60.0, 60.0, False, None, noop, (), {}),
        PendingTimer(close.id, START + 100, 100.0, None, False, START + 100, print, ("closed",), {}),
    ]


def test_export_of_an_empty_wheel_is_empty():
    with Wheel(virtual_clock=START) as wheel:
        assert wheel.export() == ([], 0)


def test_a_periodic_timer_whose_callback_runs_is_counted_not_exported():
    with Wheel(virtual_clock=START) as wheel:
        seen = []
        wheel.call_every(1, lambda: seen.append(wheel.export()))
        later = wheel.call_later(5, noop)
        wheel.advance(1)

    [(timers, running)] = seen
    assert running == 1
    assert [t.id for t in timers] == [later.id]


def test_export_on_a_closed_wheel_raises():
    wheel = Wheel(virtual_clock=START)
    wheel.close()
    with pytest.raises(Exception, match="export"):
        wheel.export()


def test_call_every_at_a_future_start_runs_on_its_grid():
    with Wheel(virtual_clock=START) as wheel:
        runs = Runs(wheel)
        wheel.call_every_at(START + 90, MINUTE, runs)
        wheel.advance(300)
    assert runs.at == [90, 150, 210, 270]


@pytest.mark.parametrize(
    "missed, expected",
    [("run_once", [400, 420, 480, 540]), ("skip", [420, 480, 540])],
)
def test_round_trip_resumes_on_the_original_grid(missed, expected):
    """Charging every minute from 0; exported at 150; the process is down from then until
    400 (the points 180 ... 360 pass); re-created on a new wheel, it stays on the grid."""
    with Wheel(virtual_clock=START) as before:
        charged = Runs(before)
        before.call_every(MINUTE, charged)
        before.advance(150)
        timers, running = before.export()
    assert charged.at == [60, 120]
    assert running == 0
    [timer] = timers
    assert (timer.due, timer.period, timer.fixed_delay) == (START + 180, 60.0, False)

    with Wheel(virtual_clock=START + 400) as after:
        charged = Runs(after)
        after.call_every_at(
            timer.due, timer.period, charged, fixed_delay=timer.fixed_delay, missed=missed
        )
        after.advance(140)
    assert charged.at == expected


def test_call_every_at_passes_arguments_and_keeps_a_point_due_now():
    with Wheel(virtual_clock=START) as wheel:
        calls = []
        wheel.call_every_at(START, 30, lambda *a, **k: calls.append((a, k)), 1, missed="skip", x=2)
        wheel.advance(0)
        wheel.advance(30)
    assert calls == [((1,), {"x": 2})] * 2


def test_call_every_at_refuses_an_unknown_policy_and_a_zero_period():
    with Wheel(virtual_clock=START) as wheel:
        with pytest.raises(ValueError, match="missed"):
            wheel.call_every_at(START, 1, noop, missed="later")
        with pytest.raises(ValueError, match="period"):
            wheel.call_every_at(START, 0, noop)


def test_export_while_callbacks_run_on_worker_threads():
    """The export holds the wheel's locks without the GIL, while workers holding the GIL
    wait for those locks: neither waits for the other for ever, and every timer is in
    each export, or counted as running."""
    with Wheel(min_workers=2, max_workers=2) as wheel:
        busy = [wheel.call_every(0.001, sum, range(100)) for _ in range(50)]
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            timers, running = wheel.export()
            assert len(timers) + running == len(busy)
            assert len({t.id for t in timers}) == len(timers)
        assert wheel.stats()["fired"] > len(busy)
