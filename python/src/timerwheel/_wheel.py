"""``Wheel``: the native wheel plus the context manager and the asyncio helpers."""

from __future__ import annotations

import asyncio
import atexit
import os
import weakref
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Literal,
    NamedTuple,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from . import _asyncio
from ._timerwheel import _exiting, _Wheel
from ._types import Seconds

T = TypeVar("T")
W = TypeVar("W", bound="Wheel")

# Every wheel not yet garbage collected; those still open are closed at interpreter exit,
# before the interpreter starts tearing down, so that no callback runs during teardown.
_wheels: "weakref.WeakSet[Wheel]" = weakref.WeakSet()


class PendingTimer(NamedTuple):
    """One pending timer of ``Wheel.export()``.

    - ``id``: its id in the exporting wheel (a re-created timer gets a new one).
    - ``due``: its next run as a Unix time in seconds on the wheel's clock (``now()``:
      virtual or real); before the export's instant for a timer due and waiting.
    - ``due_monotonic``: the same run in seconds since the wheel started (exact).
    - ``period``: seconds between runs; None for a one-shot.
    - ``fixed_delay``: True for a periodic timer of ``fixed_delay=True``.
    - ``at``: for a ``call_at`` timer, the Unix time it was added for; None otherwise.
    - ``callback``, ``args``, ``kwargs``: the call it makes (``kwargs`` a new dict).

    Re-create it on a new wheel with ``call_every_at(due, period, ...)`` (periodic), or
    ``call_at(at or due, ...)`` (one-shot).
    """

    id: int
    due: float
    due_monotonic: float
    period: Optional[float]
    fixed_delay: bool
    at: Optional[float]
    callback: Callable[..., object]
    args: Tuple[Any, ...]
    kwargs: Dict[str, Any]


class Wheel(_Wheel):
    """A timer wheel: a tick thread that sleeps until the next deadline and a pool of
    worker threads that run the callbacks (growing when due callbacks back up, shrinking
    after ``worker_keepalive`` seconds idle).

    Arguments (all optional; left out or None, each takes the library's default, which
    ``timerwheel.defaults()`` gives); times are float seconds or ``datetime.timedelta``,
    here and in every method:

    - ``tick``: the wheel's slot width in seconds; a timer runs within about an eighth of
      it (50 us to 1 ms) after its deadline.
    - ``min_workers``: workers kept while idle.
    - ``max_workers``: the most workers; 0 runs the callbacks on the tick thread itself.
    - ``worker_keepalive``: seconds an idle worker lives beyond ``min_workers``.
    - ``max_timers``: the most pending timers (None: no limit); beyond it adds raise
      ``TimerwheelFullError``.
    - ``manual``: no threads at all; the caller runs due callbacks with ``poll()``.
    - ``virtual_clock``: a clock that moves only by ``advance(seconds)`` and
      ``advance_to_next()``, which run the due callbacks on the calling thread (no threads,
      as ``manual``); its start as a Unix time in seconds, or True for ``time.time()``.
      ``now()`` reads it; ``call_at`` follows it. For tests of timer logic: a month of
      schedules runs in milliseconds, in the same order every time.
    - ``slow_callback``: seconds; a callback that runs at least this long is counted in
      ``stats()["slow_callbacks"]`` (None, the default: not measured).
    - ``store_path``: the file of durable timers (docs/durable.md): register handlers
      with ``register_handler``, then ``durable_open()``; ``durability`` "async" (a change
      returns once queued, committed in batches of ``store_batch`` within ``store_delay``
      seconds) or "sync" (once committed); ``missed_points`` "each" or "coalesce" for
      the periodic points that passed while the process was down.

    A setting out of its range raises ``ValueError``, naming the setting and its range.

    Callbacks run on the worker threads, holding the GIL only while Python code runs. An
    exception in a callback goes to ``sys.unraisablehook`` and is counted in
    ``stats()["callback_panics"]``; the wheel goes on. ``close()`` the wheel (or use it as a
    context manager) when done: an open wheel keeps its threads while its timers refer to
    it, and is closed at interpreter exit.
    """

    def __init__(
        self,
        tick: Optional[Seconds] = None,
        min_workers: Optional[int] = None,
        max_workers: Optional[int] = None,
        worker_keepalive: Optional[Seconds] = None,
        max_timers: Optional[int] = None,
        manual: Optional[bool] = None,
        virtual_clock: Union[float, bool, None] = None,
        slow_callback: Optional[float] = None,
        store_path: Union[str, "os.PathLike[str]", None] = None,
        durability: Literal["async", "sync"] = "async",
        store_batch: Optional[int] = None,
        store_delay: Optional[Seconds] = None,
        missed_points: Literal["each", "coalesce"] = "each",
    ) -> None:
        # The arguments were taken by the native constructor (__new__).
        _wheels.add(self)

    def __enter__(self: W) -> W:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"pending={self.stats()['pending']}"
        return f"<timerwheel.{type(self).__name__} {state}>"

    def export(self) -> Tuple[List[PendingTimer], int]:
        """The pending timers at one instant, in deadline order, and the number of
        periodic timers left out because their callback was running then:
        ``timers, running = wheel.export()``. Each left out timer is pending again when its
        callback returns; export again while ``running`` is not 0. Adds, cancels and the
        start of runs wait while the export holds the wheel's locks (and other Python
        threads, as it holds the GIL); a timer added or cancelled concurrently is wholly
        before or after it. A one-shot whose
        callback has started is not pending and not exported."""
        records, running = self._export()
        return [PendingTimer(*record) for record in records], running

    def future_later(self, delay: Seconds, result: Any = None) -> asyncio.Future[Any]:
        """An asyncio future, of the running event loop, that gets ``result`` after
        ``delay`` seconds. The timer fires on a worker thread and resolves the future on
        the loop's thread (``loop.call_soon_threadsafe``). Cancelling the future, or the
        task awaiting it, cancels the timer. Call it from the event loop's thread."""
        return _asyncio.future_later(self, delay, result)

    async def sleep(self, delay: Seconds, result: T = None) -> T:  # type: ignore[assignment]
        """Like ``asyncio.sleep(delay, result)``, with the wheel keeping the time:
        suspends the calling coroutine for ``delay`` seconds, then returns ``result``.
        Cancelling the awaiting task cancels the timer."""
        return await _asyncio.sleep(self, delay, result)


@atexit.register
def _close_all() -> None:
    _exiting()
    for wheel in list(_wheels):
        _Wheel.close(wheel)
