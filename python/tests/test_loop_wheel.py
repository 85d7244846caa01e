"""timerwheel.asyncio.LoopWheel: callbacks on the loop's thread, in batches, with cancel and
reset that hold on the loop, under asyncio's debug mode (which raises when a loop method
that is not thread-safe is called from another thread)."""

import asyncio
import gc
import threading
import time
import weakref

import pytest

from timerwheel import Wheel, default_wheel
from timerwheel.asyncio import LoopWheel


def run(main):
    return asyncio.run(main(), debug=True)


async def until(predicate, timeout=10.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not met in time"
        await asyncio.sleep(0.002)


def wait_for_the_call(lw, timeout=10.0):
    """Blocks the loop's thread until a timer of `lw` has fired and its call waits for the
    loop (a sleep of fixed length left that to chance on a loaded machine)."""
    end = time.monotonic() + timeout
    while not lw._ready:
        assert time.monotonic() < end, "the timer did not fire in time"
        time.sleep(0.001)


def test_callbacks_run_on_the_loop_thread():
    async def main():
        async with LoopWheel() as lw:
            threads = []
            lw.call_later(0.01, lambda: threads.append(threading.get_ident()))
            lw.call_every(0.005, lambda: threads.append(threading.get_ident()))
            lw.call_at(time.time() + 0.01, lambda: threads.append(threading.get_ident()))
            await until(lambda: len(threads) >= 5)
            return threads

    assert set(run(main)) == {threading.get_ident()}


def test_timers_due_together_hop_in_one_batch():
    async def main():
        async with LoopWheel() as lw:
            hops = []
            original = lw.loop.call_soon_threadsafe

            def counting(*args, **kwargs):
                hops.append(1)
                return original(*args, **kwargs)

            lw.loop.call_soon_threadsafe = counting
            ran = []
            for i in range(200):
                lw.call_later(0.01, ran.append, i)
            time.sleep(0.1)  # the loop is busy while all of them fire
            await until(lambda: len(ran) == 200)
            return hops

    assert len(run(main)) < 20  # about one per worker's batch, not one per timer


def test_cancel_after_firing_before_the_loop_ran_it():
    async def main():
        async with LoopWheel() as lw:
            ran = []
            timer = lw.call_later(0.001, ran.append, "late")
            wait_for_the_call(lw)
            assert timer.cancel()
            assert not timer.cancel()
            await asyncio.sleep(0.05)
            return ran, timer.active

    assert run(main) == ([], False)


class Payload:
    def __call__(self, *args):
        pass


def test_a_cancelled_or_run_timer_lets_go_of_its_callback_and_arguments():
    # As asyncio's TimerHandle does: a LoopTimer that is kept (in a dict of sessions, say)
    # does not keep what it would have called once it was cancelled or ran.
    async def main():
        gone = {}
        async with LoopWheel() as lw:
            kept = []
            for end in ("cancel", "run"):
                callback, arg = Payload(), Payload()
                gone[end] = (weakref.ref(callback), weakref.ref(arg))
                timer = lw.call_later(0.001 if end == "run" else 60, callback, arg)
                kept.append(timer)
                if end == "cancel":
                    assert timer.cancel()
                else:
                    await until(lambda: not timer.active)
                del callback, arg
            gc.collect()
            return {end: [ref() is None for ref in refs] for end, refs in gone.items()}

    assert run(main) == {"cancel": [True, True], "run": [True, True]}


def test_reset_after_firing_before_the_loop_ran_it():
    async def main():
        async with LoopWheel() as lw:
            ran = []
            timer = lw.call_later(0.001, lambda: ran.append(time.monotonic()))
            wait_for_the_call(lw)
            reset_at = time.monotonic()
            assert timer.reset(0.05)  # the waiting call is dropped; it runs 50 ms later
            await until(lambda: ran)
            await asyncio.sleep(0.02)
            assert not timer.reset(1.0)  # it ran
            return ran, reset_at

    ran, reset_at = run(main)
    assert len(ran) == 1 and ran[0] - reset_at >= 0.05


def test_coroutine_callbacks_run_as_tasks_and_errors_reach_the_handler():
    async def main():
        async with LoopWheel() as lw:
            errors, done = [], []
            lw.loop.set_exception_handler(lambda loop, context: errors.append(context))

            async def later(value):
                await asyncio.sleep(0)
                done.append(value)

            def boom():
                raise ValueError("boom")

            lw.call_later(0.001, later, "async")
            lw.call_later(0.001, boom)
            await until(lambda: done and errors)
            return done, errors

    done, errors = run(main)
    assert done == ["async"]
    assert isinstance(errors[0]["exception"], ValueError)


def test_a_busy_loop_coalesces_periodic_runs():
    async def main():
        async with LoopWheel() as lw:
            runs = []
            lw.call_every(0.002, runs.append, 1)
            time.sleep(0.2)  # about 100 periods pass while the loop is blocked
            await asyncio.sleep(0)  # the drain that was scheduled meanwhile runs
            await asyncio.sleep(0)
            return len(runs)

    assert 1 <= run(main) <= 3


def test_close_cancels_what_has_not_run():
    async def main():
        lw = LoopWheel(max_workers=2)
        ran = []
        lw.call_later(0.001, ran.append, "fired, waiting for the loop")
        lw.call_later(60, ran.append, "pending")
        time.sleep(0.05)
        lw.close()
        lw.close()
        await asyncio.sleep(0.05)
        return ran, lw.wheel.closed

    assert run(main) == ([], True)


def test_a_borrowed_wheel_stays_open():
    async def main():
        w = default_wheel()
        async with LoopWheel(wheel=w) as lw:
            assert await lw.sleep(0.01, "slept") == "slept"
        return w.closed

    assert run(main) is False
    with pytest.raises(TypeError):
        LoopWheel(wheel=default_wheel(), tick=0.001)


def test_sleep_cancelled_cancels_its_timer():
    async def main():
        async with LoopWheel() as lw:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(lw.sleep(60), 0.02)
            await until(lambda: lw.wheel.stats()["pending"] == 0)
            return lw.wheel.stats()["cancelled"]

    assert run(main) == 1


def test_needs_a_running_loop_or_one_given():
    with pytest.raises(RuntimeError):
        LoopWheel()
    loop = asyncio.new_event_loop()
    try:
        lw = LoopWheel(wheel=Wheel(), loop=loop)
        assert lw.loop is loop
        lw.wheel.close()
    finally:
        loop.close()
