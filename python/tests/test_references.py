"""A fired or cancelled timer releases its callback and arguments at once, even while the
Timer object is still referenced; a garbage-collected wheel shuts down."""

import gc
import sys
import threading
import weakref

from timerwheel import TimerwheelBusyError, Wheel

from conftest import wait_until


class Callback:
    def __init__(self):
        self.done = threading.Event()

    def __call__(self, arg, *, kw):
        self.done.set()


class Arg:
    pass


def schedule(wheel, delay):
    callback, arg, kwarg = Callback(), Arg(), Arg()
    timer = wheel.call_later(delay, callback, arg, kw=kwarg)
    refs = [weakref.ref(o) for o in (callback, arg, kwarg)]
    return timer, callback.done, refs


def test_fired_timer_releases_callback_and_args(wheel):
    timer, done, refs = schedule(wheel, 0.01)
    assert done.wait(10)
    wait_until(lambda: all(r() is None for r in refs))
    assert timer is not None


def test_cancelled_timer_releases_callback_and_args_at_once(wheel):
    timer, _, refs = schedule(wheel, 60)
    assert timer.cancel()
    assert all(r() is None for r in refs)


def test_cancelled_periodic_timer_releases_its_callback(wheel):
    callback = Callback()
    ref = weakref.ref(callback)
    timer = wheel.call_every(60, callback, 1, kw=2)
    del callback
    assert timer.cancel()
    assert ref() is None


def test_close_releases_pending_callbacks():
    w = Wheel()
    timer, _, refs = schedule(w, 60)
    w.close()
    assert all(r() is None for r in refs)
    assert not timer.active


def test_garbage_collected_wheel_shuts_down():
    w = Wheel()
    _, _, refs = schedule(w, 60)
    del w, _
    gc.collect()
    assert all(r() is None for r in refs)


def test_dropping_a_wheel_keeps_the_exception_or_value_in_flight():
    def raises():
        w = Wheel()
        w.call_later(60, print)
        raise KeyError("in flight")

    def generator():
        w = Wheel()
        w.call_later(60, print)
        yield 1
        return "value"

    try:
        raises()
    except KeyError as err:
        assert err.args == ("in flight",)
    gen = generator()
    next(gen)
    try:
        next(gen)
    except StopIteration as stop:
        assert stop.value == "value"


def test_cancel_takes_exactly_one_reference_from_a_callable_held_elsewhere(wheel):
    # Many timers share one callable (the common case): each cancel gives back its own
    # reference, no more, no less, however the cancels come (one by one, cancel_many).
    callback = Callback()
    before = sys.getrefcount(callback)
    timers = [wheel.call_later(60, callback) for _ in range(100)]
    assert sys.getrefcount(callback) == before + 100
    assert all(t.cancel() for t in timers[:50])
    assert sys.getrefcount(callback) == before + 50
    assert wheel.cancel_many(timers[40:]) == [False] * 10 + [True] * 50
    assert sys.getrefcount(callback) == before
    assert not any(t.cancel() for t in timers)
    assert sys.getrefcount(callback) == before


class CancelsItselfWhenFreed:
    """A callable whose finaliser calls cancel_sync of its own timer and keeps the outcome."""

    def __init__(self, holder, outcome):
        self.holder, self.outcome = holder, outcome

    def __call__(self):
        pass

    def __del__(self):
        try:
            self.outcome.append(self.holder[0].cancel_sync())
        except Exception as err:  # noqa: BLE001 - the outcome is the test's
            self.outcome.append(err)


def test_a_callable_freed_by_its_cancel_runs_as_the_timers_drop(wheel):
    # The cancel releases the last reference: the finaliser runs inside the timer's drop,
    # where cancel_sync of that timer would wait for itself, so it is refused.
    holder, outcome = [], []
    holder.append(wheel.call_later(60, CancelsItselfWhenFreed(holder, outcome)))
    assert holder[0].cancel()
    assert len(outcome) == 1 and isinstance(outcome[0], TimerwheelBusyError), outcome
    assert not holder[0].active
