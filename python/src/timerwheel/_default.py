"""The shared default wheel behind the module-level functions: one tick thread and one
worker pool for the whole process, created on first use and never closed by callers. A
child made by ``os.fork()`` starts a default wheel of its own on first use."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Callable, Optional, TypeVar

from ._errors import TimerwheelBusyError
from ._timerwheel import Timer
from ._wheel import Wheel

T = TypeVar("T")

_lock = threading.Lock()
_shared: Optional[Wheel] = None


class _SharedWheel(Wheel):
    """The process-wide wheel: ``close()`` refuses, as the wheel is shared."""

    def close(self) -> None:
        """Refuses: the shared default wheel lives as long as the process."""
        raise TimerwheelBusyError("the shared default wheel cannot be closed")


def _forget_in_child() -> None:
    """After ``os.fork()``, in the child: the parent's default wheel has no threads there
    (its pending timers are discarded with it), and the lock may have been held by a thread
    that the child does not have. The next use starts a new default wheel."""
    global _lock, _shared
    _lock = threading.Lock()
    _shared = None


if hasattr(os, "register_at_fork"):  # every POSIX system
    os.register_at_fork(after_in_child=_forget_in_child)


def default_wheel() -> Wheel:
    """The process-wide shared wheel (default settings), created on first use. Every
    caller gets the same one; it cannot be closed (it is shut down at interpreter exit).
    In a child made by ``os.fork()``, the first call starts the child's own."""
    global _shared
    shared = _shared
    if shared is None:
        with _lock:
            if _shared is None:
                _shared = _SharedWheel()
            shared = _shared
    return shared


def call_later(delay: float, callback: Callable[..., object], /, *args: Any, **kwargs: Any) -> Timer:
    """``Wheel.call_later`` on the shared default wheel."""
    return default_wheel().call_later(delay, callback, *args, **kwargs)


def call_at(when: float, callback: Callable[..., object], /, *args: Any, **kwargs: Any) -> Timer:
    """``Wheel.call_at`` on the shared default wheel."""
    return default_wheel().call_at(when, callback, *args, **kwargs)


def call_every(
    period: float,
    callback: Callable[..., object],
    /,
    *args: Any,
    fixed_delay: bool = False,
    first: Optional[float] = None,
    **kwargs: Any,
) -> Timer:
    """``Wheel.call_every`` on the shared default wheel."""
    return default_wheel().call_every(
        period, callback, *args, fixed_delay=fixed_delay, first=first, **kwargs
    )


def future_later(delay: float, result: Any = None) -> asyncio.Future[Any]:
    """``Wheel.future_later`` on the shared default wheel."""
    return default_wheel().future_later(delay, result)


async def sleep(delay: float, result: T = None) -> T:  # type: ignore[assignment]
    """``Wheel.sleep`` on the shared default wheel."""
    return await default_wheel().sleep(delay, result)
