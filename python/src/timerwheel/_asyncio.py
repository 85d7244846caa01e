"""asyncio on top of a wheel: the timer fires on a worker thread and hands the result to
the event loop's thread with ``loop.call_soon_threadsafe``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ._timerwheel import _Wheel
    from ._types import Seconds

T = TypeVar("T")


def future_later(wheel: _Wheel, delay: Seconds, result: Any = None) -> asyncio.Future[Any]:
    """A future of the running event loop that gets ``result`` after ``delay`` seconds.

    Cancelling the future (for instance by cancelling the task awaiting it) cancels the
    timer."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    timer = wheel.call_later(delay, _resolve_soon, loop, future, result)
    future.add_done_callback(lambda _: timer.cancel())
    return future


async def sleep(wheel: _Wheel, delay: Seconds, result: T = None) -> T:  # type: ignore[assignment]
    """Suspends the calling coroutine for ``delay`` seconds, then returns ``result``."""
    return await future_later(wheel, delay, result)  # type: ignore[no-any-return]


def _resolve_soon(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any) -> None:
    # On a worker thread: only the loop's own thread may touch the future.
    try:
        loop.call_soon_threadsafe(_resolve, future, result)
    except RuntimeError:
        pass  # the loop is closed: nobody can await the future any more


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)
