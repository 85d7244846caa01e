"""The types of the package's signatures: ``Stats`` (what ``stats()`` returns) and
``Seconds`` (a delay or a period)."""

from datetime import timedelta
from typing import TypedDict, Union

#: A delay, a period or a tick: float (or int) seconds, or a ``datetime.timedelta``.
Seconds = Union[float, timedelta]


class Stats(TypedDict):
    """The counters of ``Wheel.stats()``: a plain dict with these keys, those of the C
    ``tw_stats`` fields, in that order. Times are microseconds."""

    pending: int
    added: int
    fired: int
    fired_one_shot: int
    cancelled: int
    discarded: int
    workers: int
    workers_peak: int
    workers_spawned: int
    workers_retired: int
    queue_depth: int
    late_p50_us: int
    late_p99_us: int
    late_max_us: int
    callback_panics: int
    slow_callbacks: int
    span_ms: int
