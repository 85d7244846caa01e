"""Timer groups (docs/contract.md, "Timer groups"): a context manager that cancels its
timers, on_end once after every timer released its callback, a closed group refusing adds,
a group cancelled from its own callback, and on_end calling back into the wheel."""

import gc
import threading
import weakref

import pytest

from timerwheel import Group, TimerwheelError, TimerwheelGroupClosedError, Wheel

from conftest import wait_until

START = 1_704_067_200.0


@pytest.fixture
def vwheel():
    with Wheel(virtual_clock=START) as w:
        yield w


class Payload:
    """A callback argument whose release the test can watch."""


def test_leaving_the_block_cancels_every_timer_and_on_end_follows_them(vwheel):
    payload = Payload()
    alive = weakref.ref(payload)
    ends = []
    with vwheel.group(on_end=lambda: ends.append(alive() is None)) as session:
        assert isinstance(session, Group)
        idle = session.call_later(30, print, payload)
        charge = session.call_every(1, print, payload)
        at = session.call_at(START + 60, print, payload)
        del payload
    assert not (idle.active or charge.active or at.active)
    gc.collect()
    assert ends == [True], "on_end ran once, after every callback was released"
    with pytest.raises(TimerwheelError, match="no such"):
        session.call_later(1, print)  # ended
    assert not session.cancel() and not session.close()


def test_a_session_whose_timer_fired_adds_the_next_and_close_lets_it_run(vwheel):
    runs, ends = [], []
    session = vwheel.group(on_end=lambda: ends.append(len(runs)))
    session.call_later(1, runs.append, "first")
    vwheel.advance(2)
    assert runs == ["first"] and ends == []
    session.call_later(1, runs.append, "next")
    assert session.close()
    assert not session.close()
    with pytest.raises(TimerwheelGroupClosedError):
        session.call_later(1, print)  # closed, a timer left
    vwheel.advance(2)
    assert runs == ["first", "next"] and ends == [2]


def test_a_callback_cancels_its_own_group_and_on_end_calls_back_in(vwheel):
    seen = []

    def on_end():
        seen.append(("end", session.cancel()))
        seen.append(("new", vwheel.group().cancel()))

    session = vwheel.group(on_end=on_end)

    def charge():
        seen.append(("charge", session.cancel()))

    session.call_later(60, print)
    session.call_every(1, charge)
    vwheel.advance(5)
    assert seen == [("charge", True), ("end", False), ("new", True)]


def test_on_end_that_raises_goes_to_the_unraisable_hook(vwheel, monkeypatch):
    reported = []
    monkeypatch.setattr("sys.unraisablehook", reported.append)

    def on_end():
        raise RuntimeError("boom")

    vwheel.group(on_end=on_end).close()
    assert len(reported) == 1 and isinstance(reported[0].exc_value, RuntimeError)


def test_adds_racing_a_cancel_from_another_thread_lose_nothing():
    ended = threading.Event()
    with Wheel(max_workers=2) as w:
        for _ in range(20):
            group = w.group(on_end=ended.set)
            accepted = []

            def add():
                try:
                    while True:
                        accepted.append(group.call_later(0.001, lambda: None))
                except TimerwheelGroupClosedError:
                    pass
                except TimerwheelError as e:  # the group ended: not found
                    assert "no such" in str(e)

            thread = threading.Thread(target=add)
            thread.start()
            group.cancel()
            thread.join()
            wait_until(ended.is_set)
            ended.clear()
            assert not any(t.active for t in accepted)
