"""A wheel bound to an asyncio event loop: its callbacks run on the loop's thread.

    from timerwheel.asyncio import LoopWheel

    async def main():
        async with LoopWheel() as wheel:               # bound to the running loop
            idle = wheel.call_later(30, hang_up)       # hang_up runs on the loop's thread
            idle.reset(30)                             # activity
            await wheel.sleep(0.5)

The timers live in a ``Wheel`` (its tick thread keeps the time, O(1) add, cancel and
reset); when one fires, its worker thread hands the call to the loop with
``loop.call_soon_threadsafe``, once per batch: the calls that fall due while the loop has
not yet run the previous ones join that batch. A callback that returns an awaitable
(a coroutine function) has it run as a task of the loop. An exception in a callback goes to
the loop's exception handler, as asyncio's own callbacks' do.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Deque, Optional, Set, Tuple, Type, TypeVar

from ._timerwheel import Timer
from ._types import Seconds
from ._wheel import Wheel

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import ParamSpec, TypeVarTuple, Unpack
    else:
        from typing_extensions import ParamSpec, TypeVarTuple, Unpack

    P = ParamSpec("P")
    Ts = TypeVarTuple("Ts")

__all__ = ["LoopTimer", "LoopWheel"]

T = TypeVar("T")
L = TypeVar("L", bound="LoopWheel")

# A call handed to the loop: the timer and the arming it belongs to.
_Ready = Tuple["LoopTimer", int]


class LoopTimer:
    """A timer of a ``LoopWheel``. Use it on the loop's thread, like asyncio's
    ``TimerHandle``: once ``cancel()`` has returned there, the callback does not run, even
    when the timer had fired and its call was waiting for the loop."""

    __slots__ = ("_wheel", "_timer", "_arming", "_done", "_periodic", "_queued", "_call")

    def __init__(self, wheel: LoopWheel, periodic: bool, call: Callable[[], object]) -> None:
        self._wheel = wheel
        self._timer: Optional[Timer] = None
        self._arming = 0  # calls of an earlier arming are stale
        self._done = False  # a one-shot that ran, or a cancelled timer
        self._periodic = periodic
        self._queued = False  # a call waits for the loop (periodic timers queue one at most)
        self._call: Optional[Callable[[], object]] = call  # None once done: let go of

    def cancel(self) -> bool:
        """Stops the timer; True if it was pending, or had fired and its call had not run
        on the loop yet (it will not run)."""
        if self._done:
            return False
        self._done = True
        self._call = None
        self._arming += 1
        self._wheel._timers.discard(self)
        assert self._timer is not None
        self._timer.cancel()
        return True

    def reset(self, delay: Seconds) -> bool:
        """Re-arms the timer ``delay`` from now (a periodic one keeps its period); True if it
        was pending or its call was waiting for the loop (that call is dropped), False if
        it ran (one-shot) or was cancelled."""
        if self._done:
            return False
        assert self._timer is not None
        if self._timer.reset(delay):
            return True
        if self._periodic:
            return False  # cancelled with its wheel
        self._arming += 1
        self._timer = self._wheel._arm_later(delay, self)
        return True

    @property
    def active(self) -> bool:
        """True until the timer ran (one-shot) or was cancelled."""
        return not self._done

    def when(self) -> Optional[float]:
        """When the timer fires next, as a Unix time in seconds on the wheel's clock
        (``Wheel.now()``, not ``loop.time()``); None when it is not waiting in the wheel."""
        return None if self._timer is None else self._timer.when()

    def __repr__(self) -> str:
        state = "active" if self.active else "done"
        return f"<timerwheel.asyncio.LoopTimer {state}>"


class LoopWheel:
    """Timers whose callbacks run on an asyncio event loop's thread.

    ``LoopWheel(**settings)`` makes a ``Wheel(**settings)`` of its own, closed with it;
    ``LoopWheel(wheel=w)`` uses ``w`` (for instance ``timerwheel.default_wheel()``) and
    leaves it open. ``loop`` defaults to the running loop, so make it inside a coroutine (as
    ``async with LoopWheel() as wheel:`` does). Call its methods, and its timers', on the
    loop's thread.

    Closing (``close()`` or leaving ``async with``) cancels the timers not yet run: no
    callback runs on the loop after it."""

    def __init__(
        self,
        wheel: Optional[Wheel] = None,
        *,
        loop: Optional[asyncio.AbstractEventLoop] = None,
        **settings: Any,
    ) -> None:
        if wheel is not None and settings:
            raise TypeError("LoopWheel takes a wheel or its settings, not both")
        self.loop: asyncio.AbstractEventLoop = loop or asyncio.get_running_loop()
        self._owns_wheel = wheel is None
        self.wheel: Wheel = Wheel(**settings) if wheel is None else wheel
        self._ready: Deque[_Ready] = collections.deque()
        self._drain_scheduled = False
        self._closed = False
        self._timers: Set[LoopTimer] = set()  # not yet done: cancelled on close
        self._tasks: Set[asyncio.Task[Any]] = set()

    def call_later(
        self, delay: Seconds, callback: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> LoopTimer:
        """Runs ``callback(*args, **kwargs)`` on the loop's thread once, ``delay`` from now
        (never earlier)."""
        timer = LoopTimer(self, False, lambda: callback(*args, **kwargs))
        timer._timer = self._arm_later(delay, timer)
        return self._track(timer)

    def call_at(
        self, when: float, callback: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> LoopTimer:
        """Runs ``callback(*args, **kwargs)`` on the loop's thread once, at the Unix time
        ``when`` (seconds, as ``time.time()``)."""
        timer = LoopTimer(self, False, lambda: callback(*args, **kwargs))
        timer._timer = self.wheel.call_at(when, self._fired, timer, timer._arming)
        return self._track(timer)

    def call_every(
        self,
        period: Seconds,
        callback: Callable[[Unpack[Ts]], object],
        /,
        *args: Unpack[Ts],
        first: Optional[Seconds] = None,
        **kwargs: Any,
    ) -> LoopTimer:
        """Runs ``callback(*args, **kwargs)`` on the loop's thread every ``period``, first
        after ``first`` (default: one period), at a fixed rate. A run still waiting for the
        loop when the next one falls due absorbs it (no burst after a busy loop)."""
        timer = LoopTimer(self, True, lambda: callback(*args, **kwargs))
        timer._timer = self.wheel.call_every(
            period, self._fired, timer, timer._arming, first=first
        )
        return self._track(timer)

    async def sleep(self, delay: Seconds, result: T = None) -> T:  # type: ignore[assignment]
        """Like ``asyncio.sleep(delay, result)``, with the wheel keeping the time."""
        future: asyncio.Future[T] = self.loop.create_future()
        timer = self.call_later(delay, _resolve, future, result)
        try:
            return await future
        finally:
            timer.cancel()

    def close(self) -> None:
        """Cancels the timers not yet run, drops the calls waiting for the loop, and closes
        the wheel if it is this LoopWheel's own. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for timer in list(self._timers):
            timer.cancel()
        self._timers.clear()
        self._ready.clear()
        if self._owns_wheel:
            self.wheel.close()

    @property
    def closed(self) -> bool:
        """True once ``close()`` has been called."""
        return self._closed

    async def __aenter__(self: L) -> L:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def _track(self, timer: LoopTimer) -> LoopTimer:
        self._timers.add(timer)
        return timer

    def _arm_later(self, delay: Seconds, timer: LoopTimer) -> Timer:
        return self.wheel.call_later(delay, self._fired, timer, timer._arming)

    def _fired(self, timer: LoopTimer, arming: int) -> None:
        """On a worker thread: queues the call for the loop, and has the loop drain the
        queue unless a drain is already on its way."""
        if self._closed or timer._queued:
            return
        timer._queued = timer._periodic
        self._ready.append((timer, arming))
        if not self._drain_scheduled:
            self._drain_scheduled = True
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:
                pass  # the loop is closed: nothing can run there any more

    def _drain(self) -> None:
        """On the loop's thread: runs the queued calls that are still current."""
        self._drain_scheduled = False
        ready = self._ready
        while ready:
            timer, arming = ready.popleft()
            timer._queued = False
            if arming != timer._arming or timer._done:
                continue  # cancelled or reset since it fired
            call = timer._call
            assert call is not None
            if not timer._periodic:
                timer._done = True
                timer._call = None
                self._timers.discard(timer)
            self._run(timer, call)

    def _run(self, timer: LoopTimer, call: Callable[[], object]) -> None:
        try:
            result = call()
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result, loop=self.loop)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self.loop.call_exception_handler(
                {"message": "Exception in a timerwheel callback", "exception": exc,
                 "timer": timer}
            )


def _resolve(future: asyncio.Future[T], result: T) -> None:
    if not future.done():
        future.set_result(result)
