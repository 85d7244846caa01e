"""The virtual clock: time moves only by advance() / advance_to_next(), which run the due
callbacks on the calling thread. Every check is exact; nothing depends on the machine."""

import gc
import math
import time
import weakref

import pytest

from timerwheel import TimerwheelBusyError, Wheel

from conftest import VIRTUAL_START as START

MINUTE = 60
DAY = 86_400


def elapsed_ms(wheel):
    """Virtual milliseconds since START."""
    return round((wheel.now() - START) * 1000)


class Session:
    """A prepaid session: charged one unit every minute, closed when its credit runs out
    or after 30 minutes without activity."""

    IDLE = 30 * MINUTE

    def __init__(self, wheel, credit):
        self.wheel = wheel
        self.credit = credit
        self.charges = 0
        self.closed = None  # (why, virtual ms since START)
        self.charging = wheel.call_every(MINUTE, self.charge)
        self.idle = wheel.call_later(self.IDLE, self.close, "idle")

    def activity(self):
        if self.closed is None:
            self.idle.reset(self.IDLE)

    def charge(self):
        self.credit -= 1
        self.charges += 1
        if self.credit == 0:
            self.close("credit")

    def close(self, why):
        self.charging.cancel()
        self.idle.cancel()
        self.closed = (why, elapsed_ms(self.wheel))


def test_a_30_day_billing_cycle_runs_in_well_under_a_second(vwheel):
    began = time.perf_counter()
    busy = Session(vwheel, credit=10**9)
    vwheel.call_every(20 * MINUTE, busy.activity)  # active all month: never idle
    short = Session(vwheel, credit=500)  # active, but its credit lasts 500 minutes
    vwheel.call_every(10 * MINUTE, short.activity)
    quiet = Session(vwheel, credit=10**9)  # active for two hours, then silent
    chatter = vwheel.call_every(5 * MINUTE, quiet.activity, first=10)
    vwheel.call_later(2 * 3600, chatter.cancel)

    vwheel.advance(30 * DAY)

    assert (busy.charges, busy.closed) == (30 * DAY // MINUTE, None)
    assert (short.charges, short.closed) == (500, ("credit", 500 * MINUTE * 1000))
    # The last activity at 1 h 55 min 10 s, closed 30 min later; charged every minute
    # until then.
    assert quiet.closed == ("idle", (6910 + 30 * MINUTE) * 1000)
    assert quiet.charges == 145
    assert elapsed_ms(vwheel) == 30 * DAY * 1000
    assert time.perf_counter() - began < 5, "a month of billing should take milliseconds"


def test_a_fixed_rate_schedule_over_a_year_runs_at_its_exact_points(vwheel):
    period_ns = 5400 * 10**9 + 250_000  # not a multiple of the 1 ms tick
    runs = []
    vwheel.call_every(period_ns / 1e9, lambda: runs.append(elapsed_ms(vwheel)))
    year = 365 * DAY
    assert vwheel.advance(year) == len(runs) == year * 10**9 // period_ns
    expected = [math.ceil(n * period_ns / 10**6) for n in range(1, len(runs) + 1)]
    assert runs == expected, "each point on its own tick: never early, no drift"


def simulate(seed):
    """A billing-like program with seeded delays: charges that add follow-ups."""
    order = []
    state = seed
    with Wheel(virtual_clock=START) as w:
        for session in range(20):
            state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
            first = (state >> 33) % 60_000 / 1000

            def charge(session=session, follow_up=(state >> 20) % 5000 / 1000):
                order.append(("charge", session, elapsed_ms(w)))
                w.call_later(follow_up, order.append, ("follow-up", session))

            w.call_every(MINUTE, charge, first=first)
        w.advance(30 * MINUTE)
    return order


def test_the_same_program_runs_its_callbacks_in_the_same_order():
    first = simulate(7)
    assert len(first) > 1000
    assert first == simulate(7)
    assert first != simulate(8)


class Payload:
    """An object whose release the tests watch."""


def test_delete_and_release_hold_in_virtual_time(vwheel):
    ran = []
    deleted, fired = Payload(), Payload()
    gone = [weakref.ref(deleted), weakref.ref(fired)]
    timer = vwheel.call_later(MINUTE, ran.append, deleted)
    vwheel.call_later(MINUTE, ran.append, fired)
    periodic = vwheel.call_every(MINUTE, ran.append, "tick")
    del deleted, fired
    assert timer.cancel()
    assert not timer.cancel()
    assert vwheel.advance(3 * MINUTE) == 4
    assert [type(r).__name__ for r in ran] == ["Payload", "str", "str", "str"]
    ran.clear()
    gc.collect()
    assert [ref() for ref in gone] == [None, None], "each released once it is done"
    assert periodic.cancel()
    assert vwheel.advance(3 * MINUTE) == 0


def test_timers_added_by_callbacks_run_in_the_same_advance_when_due(vwheel):
    ran = []

    def first():
        ran.append(("first", elapsed_ms(vwheel)))
        for name, delay in [("now", 0), ("soon", 5), ("beyond", 15)]:
            vwheel.call_later(delay, lambda name=name: ran.append((name, elapsed_ms(vwheel))))

    vwheel.call_later(10, first)
    assert vwheel.advance(20) == 3
    assert ran == [("first", 10_000), ("now", 10_000), ("soon", 15_000)]
    assert vwheel.advance_to_next() == 1
    assert ran[-1] == ("beyond", 25_000)
    assert vwheel.advance_to_next() == 0


def test_equal_deadlines_run_in_the_order_added(vwheel):
    ran = []
    for label in range(40):
        vwheel.call_later(300, ran.append, label)
    assert vwheel.advance(100) == 0
    for label in range(40, 60):
        vwheel.call_later(200, ran.append, label)
    assert vwheel.advance(200) == 60
    assert ran == list(range(60))


def test_call_at_follows_the_virtual_clock(vwheel):
    ran = []
    vwheel.call_at(START + DAY, ran.append, "tomorrow")
    assert vwheel.advance(DAY - 0.001) == 0, "never early"
    assert vwheel.advance_to_next() == 1
    assert vwheel.now() == START + DAY


def test_virtual_clock_true_starts_now_and_only_virtual_wheels_advance(manual):
    before = time.time()
    raised = []

    def advance_inside():
        try:
            w.advance(1)
        except TimerwheelBusyError as e:
            raised.append(e)

    with Wheel(virtual_clock=True) as w:
        assert before <= w.now() <= time.time()
        w.call_later(1, advance_inside)
        assert w.advance(1) == 1
        assert len(raised) == 1, "no advance from inside a callback"
    with pytest.raises(RuntimeError, match="virtual_clock"):
        manual.advance(1)
