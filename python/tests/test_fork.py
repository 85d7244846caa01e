"""os.fork(): the module-level functions start a default wheel of their own in the child, a
wheel created before the fork raises TimerwheelForkedError there (close() still works), and
no child hangs when the wheels' threads were busy at the moment of the fork."""

import os
import select
import signal
import threading
import time
import traceback
import warnings

import pytest

import timerwheel
from timerwheel import TimerwheelForkedError, Wheel

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork()")

# The longest a child may take; a hung one takes forever.
CHILD_WAIT = 20.0


def in_child(check):
    """Runs `check()` in an os.fork() child, which sends back what went wrong ("" when
    nothing did) through a pipe; returns it, or a note when the child sent nothing within
    CHILD_WAIT seconds (it hung, and is killed, or crashed)."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns that forking a multithreaded process may deadlock the child:
        # what these tests check is that the library's part does not.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        try:
            problem = check() or ""
        except BaseException:  # the child must reach _exit whatever happens
            problem = traceback.format_exc()
        os.write(write_end, (problem or "ok").encode())
        os._exit(0)
    os.close(write_end)
    ready, _, _ = select.select([read_end], [], [], CHILD_WAIT)
    verdict = os.read(read_end, 65536).decode() if ready else ""
    os.close(read_end)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "" if verdict == "ok" else verdict or "the child hung or crashed"


def fires(call_later):
    """Whether a timer added with `call_later(delay, callback)` fires within 10 s."""
    fired = threading.Event()
    call_later(0.01, fired.set)
    return fired.wait(10)


def test_module_functions_use_a_new_default_wheel_in_the_child():
    parent_default = timerwheel.default_wheel()
    assert fires(timerwheel.call_later)
    ticks = []
    ticker = timerwheel.call_every(0.001, ticks.append, 1)

    def child():
        if timerwheel.default_wheel() is parent_default:
            return "the child got the parent's default wheel"
        if not fires(timerwheel.call_later):
            return "a timer of the child's default wheel did not fire"
        with pytest.raises(TimerwheelForkedError, match="before fork"):
            parent_default.call_later(0.01, print)
        before = len(ticks)
        time.sleep(0.05)
        if len(ticks) != before:
            return "the parent's periodic timer runs in the child"
        return ""

    assert in_child(child) == ""
    assert ticker.cancel()
    assert fires(timerwheel.call_later)


def test_a_wheel_from_before_the_fork_raises_and_closes_in_the_child():
    with Wheel() as wheel:
        released = []
        timer = wheel.call_later(3600, released.append, 1)

        def child():
            with pytest.raises(TimerwheelForkedError):
                wheel.call_later(0.01, print)
            with pytest.raises(TimerwheelForkedError):
                timer.cancel()
            with pytest.raises(TimerwheelForkedError):
                timer.reset(0.01)
            if wheel.stats()["pending"] != 1:
                return "stats() of the parent's wheel does not show its pending timer"
            wheel.close()  # discards the child's copy of the pending timer, no waiting
            return "" if wheel.closed else "close() did not close"

        assert in_child(child) == ""
        assert timer.active and fires(wheel.call_later)


def test_no_child_hangs_while_threads_add_and_cancel():
    stop = threading.Event()
    with Wheel(max_workers=2) as wheel:

        def hammer():  # some timers fire (delays of 0 to 2 ms), so the workers run too
            delay_ms = 0
            while not stop.is_set():
                delay_ms = (delay_ms + 1) % 3
                for call_later in (wheel.call_later, timerwheel.call_later):
                    call_later(delay_ms / 1000, int).cancel()

        threads = [threading.Thread(target=hammer) for _ in range(2)]
        for thread in threads:
            thread.start()
        try:
            for _ in range(10):
                assert in_child(lambda: "" if fires(timerwheel.call_later) else "no fire") == ""
        finally:
            stop.set()
            for thread in threads:
                thread.join()
