"""call_later's shapes of call: no arguments (the callable alone is kept), positional,
keyword, both; the callback and its arguments released exactly once whichever way the
timer ends; the errors of a call without its two first arguments."""

import inspect
import sys
import weakref

import pytest

from timerwheel import Wheel


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))


@pytest.mark.parametrize(
    "args, kwargs",
    [((), {}), ((1,), {}), ((1, "two", None), {}), ((), {"k": 3}), ((1, 2), {"k": 3, "j": 4})],
)
def test_callback_gets_exactly_its_arguments(vwheel, args, kwargs):
    record = Recorder()
    vwheel.call_later(0.5, record, *args, **kwargs)
    assert vwheel.advance(1) == 1
    assert record.calls == [(args, kwargs)]


@pytest.mark.parametrize(
    "args, kwargs", [((), {}), ((1,), {}), ((), {"k": 3}), ((1,), {"k": 3})]
)
def test_export_gives_the_call_back(vwheel, args, kwargs):
    record = Recorder()
    vwheel.call_later(5, record, *args, **kwargs)
    [timer], running = vwheel.export()
    assert running == 0
    assert timer.callback is record
    assert timer.args == args
    assert timer.kwargs == kwargs


@pytest.mark.parametrize("with_args", [False, True])
@pytest.mark.parametrize("end", ["cancel", "fire", "close"])
def test_callback_released_exactly_once(with_args, end):
    record, arg = Recorder(), Recorder()
    gone = weakref.ref(record)
    base = sys.getrefcount(record), sys.getrefcount(arg)
    wheel = Wheel(virtual_clock=True)
    timers = []
    for _ in range(100):
        if with_args:
            timers.append(wheel.call_later(1, record, arg, k=arg))
        else:
            timers.append(wheel.call_later(1, record))
    assert sys.getrefcount(record) == base[0] + 100
    if end == "cancel":
        assert all(t.cancel() for t in timers)
        assert not any(t.cancel() for t in timers)
    elif end == "fire":
        assert wheel.advance(2) == 100
    wheel.close()
    if end == "fire":
        # The recorded calls hold the arguments.
        record.calls.clear()
    # Back to where it was: not kept, nor released twice.
    assert (sys.getrefcount(record), sys.getrefcount(arg)) == base
    del timers, record
    assert gone() is None


def test_missing_arguments_raise_as_python_words_it(vwheel):
    with pytest.raises(TypeError, match=r"^_Wheel.call_later\(\) missing 2 required positional arguments: 'delay' and 'callback'$"):
        vwheel.call_later()
    with pytest.raises(TypeError, match=r"^_Wheel.call_later\(\) missing 1 required positional argument: 'callback'$"):
        vwheel.call_later(1)
    # Positional-only: by keyword they are the callback's keyword arguments.
    with pytest.raises(TypeError, match="missing 2 required positional arguments"):
        vwheel.call_later(delay=1, callback=print)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'callback'"):
        vwheel.call_later(1, callback=print)
    assert vwheel.next_timeout() is None


def test_bad_delay_or_callback_adds_nothing(vwheel):
    record = Recorder()
    base = sys.getrefcount(record)
    with pytest.raises(TypeError, match="delay must be a number of seconds"):
        vwheel.call_later("1", record)
    with pytest.raises(ValueError, match="delay must be a number of seconds >= 0"):
        vwheel.call_later(-1, record, 1)
    with pytest.raises(TypeError, match="callback must be callable, got an object of type int"):
        vwheel.call_later(1, 3)
    assert vwheel.next_timeout() is None
    assert sys.getrefcount(record) == base


def test_signature_is_the_documented_one():
    sig = "(self, delay, callback, /, *args, **kwargs)"
    assert str(inspect.signature(Wheel.call_later)) == sig
