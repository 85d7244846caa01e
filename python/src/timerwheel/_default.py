"""The shared default wheel behind the module-level functions: one tick thread and one
worker pool for the whole process, created on first use and never closed by callers. Its
runtime is the library's shared runtime of the process, which a child made by
``os.fork()`` starts afresh on first use."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from ._timerwheel import Timer, _default_wheel
from ._types import Seconds
from ._wheel import Wheel

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import ParamSpec, TypeVarTuple, Unpack
    else:
        from typing_extensions import ParamSpec, TypeVarTuple, Unpack

    P = ParamSpec("P")
    Ts = TypeVarTuple("Ts")

T = TypeVar("T")


class _SharedWheel(Wheel):
    """The process-wide wheel: the native constructor gives it the library's shared
    runtime of this process, whose ``close()`` raises ``TimerwheelBusyError``."""

    _shared_default = True


def default_wheel() -> Wheel:
    """The process-wide shared wheel (default settings), created on first use. Every
    caller gets the same one; it cannot be closed (it is shut down at interpreter exit).
    In a child made by ``os.fork()``, the first call starts the child's own."""
    wheel: Wheel = _default_wheel(_SharedWheel)
    return wheel


def call_later(
    delay: Seconds, callback: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
) -> Timer:
    """``Wheel.call_later`` on the shared default wheel."""
    return default_wheel().call_later(delay, callback, *args, **kwargs)


def call_at(
    when: float, callback: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
) -> Timer:
    """``Wheel.call_at`` on the shared default wheel."""
    return default_wheel().call_at(when, callback, *args, **kwargs)


def call_every(
    period: Seconds,
    callback: Callable[[Unpack[Ts]], object],
    /,
    *args: Unpack[Ts],
    fixed_delay: bool = False,
    first: Optional[Seconds] = None,
    **kwargs: Any,
) -> Timer:
    """``Wheel.call_every`` on the shared default wheel."""
    return default_wheel().call_every(
        period, callback, *args, fixed_delay=fixed_delay, first=first, **kwargs
    )


def future_later(delay: Seconds, result: Any = None) -> asyncio.Future[Any]:
    """``Wheel.future_later`` on the shared default wheel."""
    return default_wheel().future_later(delay, result)


async def sleep(delay: Seconds, result: T = None) -> T:  # type: ignore[assignment]
    """``Wheel.sleep`` on the shared default wheel."""
    return await default_wheel().sleep(delay, result)
