"""timedelta wherever seconds go, Stats as the keys of stats(), Timer.when()."""

import math
from datetime import timedelta

import pytest

from timerwheel import Stats, Wheel

from conftest import VIRTUAL_START as START


def test_timedelta_is_accepted_wherever_seconds_are(vwheel):
    ran = []
    vwheel.call_later(timedelta(milliseconds=1500), ran.append, "later")
    periodic = vwheel.call_every(timedelta(seconds=1), ran.append, "every",
                                  first=timedelta(milliseconds=500))
    moved = vwheel.call_later(60.0, ran.append, "moved")
    assert moved.reset(timedelta(seconds=2))
    vwheel.advance(timedelta(seconds=2))
    # every at 0.5 s and 1.5 s, later at 1.5 s, moved at 2 s
    assert sorted(ran) == ["every", "every", "later", "moved"] and ran[-1] == "moved"
    periodic.cancel()
    with Wheel(tick=timedelta(microseconds=500), worker_keepalive=timedelta(seconds=2)):
        pass


@pytest.mark.parametrize("bad", ["1", None, [1.0], object()])
def test_a_delay_of_another_type_is_a_type_error(vwheel, bad):
    with pytest.raises(TypeError, match="delay must be a number of seconds or a datetime.timedelta"):
        vwheel.call_later(bad, print)
    timer = vwheel.call_later(1.0, print)
    with pytest.raises(TypeError, match="timedelta"):
        timer.reset(bad)
    with pytest.raises(TypeError, match="period"):
        vwheel.call_every(bad, print)
    assert vwheel.stats()["added"] == 1 and timer.when() == START + 1.0


def test_a_negative_timedelta_is_a_value_error(vwheel):
    with pytest.raises(ValueError, match="delay must be a number of seconds >= 0"):
        vwheel.call_later(timedelta(seconds=-1), print)
    with pytest.raises(ValueError, match="period must be > 0"):
        vwheel.call_every(timedelta(0), print)
    with pytest.raises(ValueError, match="tick"):
        Wheel(tick=timedelta(days=-1))
    assert vwheel.stats()["added"] == 0


def test_stats_has_exactly_the_keys_of_the_typed_dict(vwheel):
    assert list(vwheel.stats()) == list(Stats.__annotations__)
    assert isinstance(vwheel.stats(), dict)


def test_when_follows_the_timer_on_the_wheel_clock(vwheel):
    one_shot = vwheel.call_later(2.5, lambda: None)
    periodic = vwheel.call_every(10.0, lambda: None, first=1.0)
    assert one_shot.when() == START + 2.5
    assert periodic.when() == START + 1.0
    vwheel.advance(1.0)
    assert periodic.when() == START + 11.0  # the next run, after the first
    assert one_shot.reset(timedelta(seconds=4))
    assert one_shot.when() == START + 5.0
    vwheel.advance(4.0)
    assert one_shot.when() is None  # fired
    assert periodic.cancel() and periodic.when() is None


def test_when_is_a_unix_time_on_the_real_clock():
    with Wheel() as w:
        timer = w.call_later(60.0, print)
        assert math.isclose(timer.when(), w.now() + 60.0, abs_tol=1.0)
        timer.cancel()
