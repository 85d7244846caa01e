"""asyncio: sleep, futures resolved on the loop's thread, cancellation cancels the timer."""

import asyncio
import threading
import time

import pytest

import timerwheel
from timerwheel import Wheel

from conftest import wait_until


def test_sleep_returns_the_result_after_the_delay():
    async def main():
        with Wheel() as w:
            start = time.monotonic()
            result = await w.sleep(0.05, "done")
            return result, time.monotonic() - start

    result, elapsed = asyncio.run(main())
    assert result == "done"
    assert elapsed >= 0.05


def test_future_later_resolves_on_the_loop_thread():
    async def main():
        with Wheel() as w:
            future = w.future_later(0.02, 42)
            assert isinstance(future, asyncio.Future)
            threads = []
            future.add_done_callback(lambda _: threads.append(threading.get_ident()))
            value = await future
            await asyncio.sleep(0)
            return value, threads

    value, threads = asyncio.run(main())
    assert value == 42
    assert threads == [threading.get_ident()]


def test_cancelling_the_awaiting_task_cancels_the_timer():
    async def main():
        with Wheel() as w:
            task = asyncio.ensure_future(w.sleep(60))
            await asyncio.sleep(0.01)
            assert w.stats()["pending"] == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            wait_until(lambda: w.stats()["pending"] == 0)
            return w.stats()

    stats = asyncio.run(main())
    assert stats["cancelled"] == 1 and stats["fired"] == 0


def test_wait_for_timeout_cancels_the_timer():
    async def main():
        with Wheel() as w:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(w.sleep(60), 0.02)
            return w.stats()

    assert asyncio.run(main())["cancelled"] == 1


def test_many_sleeps_at_once():
    async def main():
        with Wheel() as w:
            return await asyncio.gather(*(w.sleep(0.001 * (i % 50), i) for i in range(1000)))

    assert asyncio.run(main()) == list(range(1000))


def test_module_level_sleep_and_future():
    async def main():
        a = await timerwheel.sleep(0.01, "a")
        b = await timerwheel.future_later(0.01, "b")
        return a + b

    assert asyncio.run(main()) == "ab"


def test_timer_firing_after_the_loop_closed_is_harmless():
    with Wheel() as w:
        loop = asyncio.new_event_loop()
        future = loop.run_until_complete(_make_future(w))
        loop.close()
        time.sleep(0.1)
        assert w.stats()["callback_panics"] == 0
        assert not future.done()


async def _make_future(w):
    return w.future_later(0.02)
