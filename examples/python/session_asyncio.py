"""The session of hello.py inside asyncio: the timers' callbacks run on the event loop's
thread, so they touch the loop's objects directly.

    pip install ./python && python examples/python/session_asyncio.py
"""
import asyncio
from datetime import timedelta

from timerwheel.asyncio import LoopWheel


async def main() -> int:
    charges = 0
    closed = asyncio.Event()

    def charge() -> None:
        nonlocal charges
        charges += 1                                   # on the loop's thread: no lock

    async with LoopWheel(tick=timedelta(milliseconds=1)) as wheel:
        idle = wheel.call_later(0.1, closed.set)       # 100 ms of silence
        wheel.call_every(timedelta(milliseconds=20), charge)
        for _ in range(5):                             # activity pushes the timeout back
            await asyncio.sleep(0.05)
            idle.reset(0.1)
        await asyncio.wait_for(closed.wait(), 10)      # silence: the timeout fires
    # leaving the block cancels the charges and closes the wheel

    print(f"session closed after {charges} charges")
    return 0 if charges > 0 else 1


raise SystemExit(asyncio.run(main(), debug=True))
