"""Shared helpers: a wheel per test (closed afterwards) and waiting with a deadline."""

import os
import time

import pytest

# Every event loop of the tests runs in asyncio's debug mode, which raises when a loop
# method that is not thread-safe is called from another thread (a worker's).
os.environ.setdefault("PYTHONASYNCIODEBUG", "1")

from timerwheel import Wheel

# Threaded behaviour is checked with generous deadlines, never tight timing.
DEADLINE = 10.0

# Where the virtual clocks of the tests start.
VIRTUAL_START = 1_704_067_200  # 2024-01-01T00:00:00Z


def wait_until(predicate, timeout=DEADLINE):
    """Polls `predicate` until it is true; fails the test after `timeout` seconds."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(0.002)


def quiet_invariant(stats):
    """added = fired_one_shot + cancelled + pending + discarded, at a quiet moment."""
    return stats["added"] == (
        stats["fired_one_shot"] + stats["cancelled"] + stats["pending"] + stats["discarded"]
    )


@pytest.fixture
def wheel():
    with Wheel(max_workers=4) as w:
        yield w


@pytest.fixture
def manual():
    with Wheel(manual=True) as w:
        yield w


@pytest.fixture
def vwheel():
    with Wheel(virtual_clock=VIRTUAL_START) as w:
        yield w
