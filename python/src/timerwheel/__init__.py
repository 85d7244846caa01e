"""timerwheel: high-performance timers for Python.

A hierarchical timing wheel (O(1) add, cancel and reset) with a tick thread that sleeps
until the next deadline and an adaptive pool of worker threads that run the callbacks.
Delays are float seconds or ``datetime.timedelta``; a timer never fires before its
deadline and fires normally within an eighth of a tick (50 us to 1 ms) after it.

    from timerwheel import Wheel

    with Wheel() as wheel:
        timer = wheel.call_later(0.5, print, "half a second later")
        timer.cancel()

The module-level ``call_later``, ``call_at``, ``call_every``, ``sleep`` and
``future_later`` use a shared default wheel (``default_wheel()``), one per process.
``timerwheel.asyncio.LoopWheel`` runs the callbacks on an asyncio event loop's thread.
"""

from ._errors import (
    DurableExistsError,
    DurableNoHandlerError,
    DurableStoreError,
    FleetBufferFullError,
    FleetFencedError,
    FleetUnreachableError,
    TimerwheelBusyError,
    TimerwheelClosedError,
    TimerwheelError,
    TimerwheelForkedError,
    TimerwheelFullError,
    TimerwheelGroupClosedError,
)
from ._timerwheel import Group, Timer, Token, __version__, defaults
try:
    from ._timerwheel import Fleet, FleetToken
except ImportError:  # a build without the cargo feature `fleet` (the manylinux wheel)
    pass
from ._types import Stats
from ._wheel import PendingTimer, Wheel
from ._default import (
    call_at,
    call_every,
    call_later,
    default_wheel,
    future_later,
    sleep,
)

__all__ = [
    "DurableExistsError",
    "DurableNoHandlerError",
    "DurableStoreError",
    "FleetBufferFullError",
    "FleetFencedError",
    "FleetUnreachableError",
    "Group",
    "PendingTimer",
    "Stats",
    "Timer",
    "Token",
    "TimerwheelBusyError",
    "TimerwheelClosedError",
    "TimerwheelError",
    "TimerwheelForkedError",
    "TimerwheelFullError",
    "TimerwheelGroupClosedError",
    "Wheel",
    "__version__",
    "call_at",
    "call_every",
    "call_later",
    "default_wheel",
    "defaults",
    "future_later",
    "sleep",
]

if "Fleet" in globals():
    __all__ += ["Fleet", "FleetToken"]
