"""Type stubs of the native module ``timerwheel._timerwheel``."""

import os
import sys
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Literal,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
    final,
)

from ._types import Seconds, Stats

if sys.version_info >= (3, 11):
    from typing import ParamSpec, TypeVarTuple, Unpack
else:
    from typing_extensions import ParamSpec, TypeVarTuple, Unpack

# call_later and call_at check the callback's arguments against it (ParamSpec). The
# periodic ones take keyword-only settings beside the callback's keyword arguments, which a
# ParamSpec cannot share: they check the positional arguments (TypeVarTuple) only.
P = ParamSpec("P")
Ts = TypeVarTuple("Ts")

__version__: str

def _exiting() -> None:
    """Tells the module that the interpreter is exiting: wheels garbage collected from now
    on are not waited for."""

def _default_wheel(cls: Type[_Wheel]) -> Any:
    """The shared default wheel of this process, an instance of ``cls`` made on the first
    call in the process (again in an ``os.fork()`` child)."""

def defaults() -> Dict[str, Any]:
    """The settings of ``Wheel()`` without arguments, as its keyword arguments: tick,
    min_workers, max_workers, worker_keepalive, max_timers, manual, virtual_clock,
    slow_callback, store_path, durability, store_batch, store_delay, missed_points (seconds
    for times; max_timers None for no limit, slow_callback None for no threshold,
    store_path None for no durable store)."""

class _Wheel:
    """The native wheel: a timerwheel runtime running Python callbacks. Use
    ``timerwheel.Wheel``."""

    def __new__(
        cls,
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
    ) -> "_Wheel": ...
    def register_handler(self, name: str, handler: Handler) -> None:
        """Registers ``handler(token, payload)`` for the durable timers named ``name``,
        before ``durable_open()``; its truth acknowledges the fire at once (False:
        ``durable_ack`` it later). ValueError for a name taken; RuntimeError after the
        open or on a wheel without ``store_path``."""
    def durable_open(self) -> None:
        """Opens the store of ``Wheel(store_path=...)``: restores every stored timer and
        delivers every unacknowledged fire again, then journals. DurableNoHandlerError
        for a stored timer whose handler is not registered (the store untouched),
        DurableStoreError when the store refuses (locked, damaged, another version)."""
    def durable_add(
        self,
        key: int,
        name: str,
        first: float,
        payload: bytes = b"",
        period: Optional[Seconds] = None,
        replace: bool = False,
    ) -> None:
        """Adds the durable timer (key, name), first due at the Unix time ``first``, then
        every ``period`` seconds (None: once). DurableExistsError when (key, name) has a
        timer and ``replace`` is False; DurableNoHandlerError for an unregistered name."""
    def durable_reset(self, key: int, name: str, when: float) -> None:
        """Moves the next deadline of (key, name) to the Unix time ``when``;
        TimerwheelError if there is no such timer."""
    def durable_delete(self, key: int, name: str) -> None:
        """Removes the durable timer (key, name); TimerwheelError if there is none."""
    def durable_ack(self, tokens: Sequence[Token]) -> int:
        """Acknowledges fires, many per call; returns how many tokens matched an
        unacknowledged fire."""
    def durable_flush(self) -> int:
        """Commits everything queued; returns the sequence number that is durable."""
    def durable_flush_to(self, seq: int) -> int:
        """Commits the changes up to the sequence ``seq`` (``durable_stats()["last_seq"]``
        read after them), not those queued after it; returns the durable sequence number.
        TimerwheelError for a sequence not handed out yet."""
    def durable_stats(self) -> Dict[str, int]:
        """The store's counters: last_seq, durable_seq, pending_events, commits,
        sink_failures, acks, timers, unacked_fires, redelivered."""
    def group(self, on_end: Optional[Callable[[], object]] = None) -> Group:
        """A new group of timers (docs/contract.md, "Timer groups"); ``on_end()`` is
        called once when the group has ended: cancelled or closed, and every timer in it
        ended."""
    def call_later(
        self, delay: Seconds, callback: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> Timer:
        """Runs ``callback(*args, **kwargs)`` once, ``delay`` seconds from now (never
        earlier). ValueError for a negative or NaN delay, TypeError for a delay that is
        neither a number nor a timedelta or a callback that is not callable, TimerwheelClosedError after close(), TimerwheelFullError at
        capacity."""
    def call_at(
        self, when: float, callback: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> Timer:
        """Runs ``callback(*args, **kwargs)`` once at the Unix time ``when`` (seconds, as
        ``time.time()``); a time in the past runs at once."""
    def call_every(
        self,
        period: Seconds,
        callback: Callable[[Unpack[Ts]], object],
        /,
        *args: Unpack[Ts],
        fixed_delay: bool = False,
        first: Optional[Seconds] = None,
        **kwargs: Any,
    ) -> Timer:
        """Runs ``callback(*args, **kwargs)`` every ``period`` seconds (> 0), first after
        ``first`` seconds (default: one period). Runs never overlap. Fixed rate by
        default; ``fixed_delay=True`` waits ``period`` after each run returns."""
    def call_every_at(
        self,
        first: float,
        period: Seconds,
        callback: Callable[[Unpack[Ts]], object],
        /,
        *args: Unpack[Ts],
        fixed_delay: bool = False,
        missed: Literal["run_once", "skip"] = "run_once",
        **kwargs: Any,
    ) -> Timer:
        """Runs ``callback(*args, **kwargs)`` every ``period`` seconds on the schedule
        ``first, first + period, ...`` anchored at the Unix time ``first`` on the wheel's
        clock. When ``first`` has passed, ``missed="run_once"`` runs once now, then at the
        next point; ``missed="skip"`` waits for the next point. ValueError for another
        ``missed``."""
    def _export(self) -> Tuple[List[Tuple[Any, ...]], int]:
        """The pending timers as tuples of the fields of ``PendingTimer``, and the count
        of periodic timers left out because their callback was running."""
    def stats(self) -> Stats:
        """The counters since the wheel started (a dict): pending, added, fired,
        fired_one_shot, cancelled, discarded, workers, workers_peak, workers_spawned,
        workers_retired, queue_depth, late_p50_us, late_p99_us, late_max_us,
        callback_panics, slow_callbacks, span_ms."""
    def stats_recent(self, window: Seconds = 60.0) -> Stats:
        """The counters of the last ``window`` seconds (1 to 60), with the keys of
        ``stats()``: the events and lateness since the newest earlier call at least
        ``window`` ago (give or take half a second; since the start when the wheel is
        younger; ``span_ms`` says how long), the gauges as now."""
    def metrics_text(self) -> str:
        """The wheel's metrics in Prometheus's text format (version 0.0.4), as the C
        library's ``tw_metrics_text`` writes them."""
    def close(self) -> None:
        """Shuts the wheel down: waits for running callbacks, discards pending timers;
        no callback starts after it returns. Idempotent. TimerwheelBusyError from one of
        the wheel's own callbacks, and for the shared default wheel."""
    @property
    def closed(self) -> bool:
        """True once ``close()`` has returned."""
    def poll(self) -> int:
        """Manual mode: runs the due callbacks on this thread; returns how many ran."""
    def next_timeout(self) -> Optional[float]:
        """Seconds until the next deadline (0.0 if one is due), None if none is pending."""
    def advance(self, seconds: Seconds) -> int:
        """Virtual clock: moves time forward by ``seconds`` and runs every callback that
        falls due on the way, on this thread, in deadline order (including the timers
        those callbacks add); returns how many ran. RuntimeError on the real clock,
        TimerwheelBusyError from one of this wheel's callbacks."""
    def advance_to_next(self) -> int:
        """Virtual clock: moves time to the next deadline and runs what is due there;
        returns how many ran (0, the clock unmoved, when no timer is pending)."""
    def cancel_many(self, timers: Sequence[Timer]) -> List[bool]:
        """What ``cancel()`` of each timer returns, in order: this wheel's timers are
        cancelled in one call (a timer given twice: False at its later places), the others
        each by its own ``cancel()``."""
    def now(self) -> float:
        """The wheel's clock as a Unix time in seconds: the virtual clock, or the system
        clock (``time.time()``)."""

@final
class Token:
    """Names one fire of a durable timer; a fire delivered again after a restart has the
    same token. Store it with the fire's effect under a unique constraint, then
    ``durable_ack`` it. Equal tokens hash alike."""

    def __init__(self, key: int, name: str, occurrence_ms: int, epoch: int) -> None: ...
    @property
    def key(self) -> int:
        """The timer's key."""
    @property
    def name(self) -> str:
        """The timer's (handler's) name."""
    @property
    def occurrence_ms(self) -> int:
        """The fire's scheduled deadline, in ms since the Unix epoch."""
    @property
    def occurrence(self) -> float:
        """The same as a Unix time in seconds."""
    @property
    def epoch(self) -> int:
        """The timer's incarnation: a replaced or re-added timer has a new one."""

# A durable timer's handler: called with the fire's token and the timer's payload; returns
# whether to acknowledge the fire now.
Handler = Callable[[Token, bytes], bool]

@final
class FleetToken:
    """Names one fire of a fleet timer; a fire delivered again by the shard's next owner has
    the same key, name, occurrence and version under a greater epoch. Store it with the
    fire's effect under a unique constraint, then ``Fleet.ack`` it. Equal tokens hash
    alike."""

    def __init__(
        self, key: int, name: str, occurrence_ms: int, version: int, shard: int, epoch: int
    ) -> None: ...
    @property
    def key(self) -> int:
        """The timer's key (its hash picks the shard)."""
    @property
    def name(self) -> str:
        """The timer's (handler's) name."""
    @property
    def occurrence_ms(self) -> int:
        """The fire's scheduled deadline, in ms since the Unix epoch."""
    @property
    def occurrence(self) -> float:
        """The same as a Unix time in seconds."""
    @property
    def version(self) -> int:
        """The timer's incarnation: a replaced or re-added timer has a new one."""
    @property
    def shard(self) -> int:
        """The key's shard."""
    @property
    def epoch(self) -> int:
        """The shard's epoch when the fire was delivered: ``Fleet.ack`` refuses it
        (FleetFencedError) once the lease moved on."""

# A fleet timer's handler: called on one of the node's threads with the fire's token and
# the timer's payload; returns whether to acknowledge the fire now.
FleetHandler = Callable[[FleetToken, bytes], bool]

# What a change through a fleet node returns: committed, or kept in the node's buffer while
# PostgreSQL does not answer (written, in order, when it answers).
ChangeStatus = Literal["written", "buffered"]

@final
class Fleet:
    """A node of a fleet on PostgreSQL (docs/fleet.md; in builds with the cargo feature
    ``fleet``). Register handlers, then ``join``; ``with fleet.join(conninfo, name):``
    leaves on exit. Times are Unix times and seconds. A call before ``join`` raises
    RuntimeError, after ``leave`` TimerwheelClosedError."""

    def __init__(
        self,
        *,
        ttl: float = 10.0,
        window: float = 60.0,
        poll: float = 0.5,
        batch: int = 500,
        listen: bool = True,
        buffer: int = 10000,
        missed_points: Literal["each", "coalesce"] = "each",
    ) -> None:
        """The lease TTL (at least 0.1), the near window (at least ttl / 2), the longest
        wait between claims, timers claimed per transaction, LISTEN/NOTIFY, and the bound
        of the buffer of changes kept while PostgreSQL does not answer; checked by
        ``join`` (ValueError). ``missed_points``: what becomes of the points of a periodic
        timer that fell due while no node held its shard, "each" delivered or one fire for
        the latest ("coalesce"; docs/contract.md, "Fleet store"); ValueError at once for
        another name."""
    def register_handler(self, name: str, handler: FleetHandler) -> None:
        """Registers ``handler(token, payload)`` for the timers named ``name``, before
        ``join()``; its truth acknowledges the fire at once (False: ``ack`` it later).
        ValueError for a name taken or empty; RuntimeError after ``join``."""
    def join(self, conninfo: str, node_name: str) -> Fleet:
        """Joins the fleet at ``conninfo`` (a libpq connection string) as ``node_name``
        and starts firing; returns the node. ValueError (a connection string that cannot
        be parsed, bad settings), FleetUnreachableError, DurableStoreError (no fleet
        schema: it is created by an explicit call, never here), TimerwheelBusyError (joined
        or left already). No message holds the connection string."""
    def add(
        self,
        key: int,
        name: str,
        first: float,
        payload: bytes = b"",
        period: Optional[float] = None,
        replace: bool = False,
    ) -> ChangeStatus:
        """Adds the timer (key, name), first due at the Unix time ``first``, then every
        ``period`` seconds (None: once). DurableNoHandlerError (no handler of this node is
        registered under ``name``), DurableExistsError, FleetBufferFullError (PostgreSQL
        does not answer and the buffer is full: not taken)."""
    def reset(self, key: int, name: str, when: float) -> ChangeStatus:
        """Moves the next deadline of the timer (key, name) to the Unix time ``when``;
        TimerwheelError if there is none."""
    def delete(self, key: int, name: str) -> ChangeStatus:
        """Removes the timer (key, name); TimerwheelError if there is none."""
    def ack(self, tokens: Sequence[FleetToken]) -> int:
        """Acknowledges fires, shard by shard; returns how many tokens matched an
        unacknowledged fire. FleetFencedError when a token's shard moved past its epoch
        (the other shards' tokens are acknowledged)."""
    def flush(self) -> None:
        """Writes the buffered changes; FleetUnreachableError while PostgreSQL does not
        answer."""
    @property
    def pending(self) -> int:
        """Changes waiting in the buffer."""
    def leave(self) -> None:
        """Writes what is buffered, stops firing and hands every shard back at once;
        then every call but ``leave`` raises TimerwheelClosedError. While PostgreSQL
        does not answer and changes wait, FleetUnreachableError, and the node stays
        (nothing is dropped). TimerwheelBusyError from one of the node's handlers."""
    def __enter__(self) -> Fleet: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

@final
class Timer:
    """A scheduled timer. Dropping the handle does not cancel the timer."""

    @property
    def id(self) -> int:
        """The timer's id, a positive integer."""
    @property
    def active(self) -> bool:
        """True while the timer will run (again) unless cancelled."""
    def cancel(self) -> bool:
        """Stops the timer; True if it was pending and will not start again."""
    def cancel_sync(self) -> bool:
        """Like ``cancel()``, then waits for a run under way on another thread."""
    def reset(self, delay: Seconds) -> bool:
        """Re-arms a pending timer ``delay`` seconds from now; False if not pending."""
    def when(self) -> Optional[float]:
        """When the timer runs next, as a Unix time in seconds on its wheel's clock
        (``Wheel.now()``); None when it is not waiting (fired, cancelled, due and about to
        run, or a periodic timer whose callback is running)."""

@final
class Group:
    """A group of timers, made by ``Wheel.group()``: cancelled together, and as a context
    manager cancelled when the block ends. Adds raise TimerwheelGroupClosedError once the
    group is closed or cancelled."""

    @property
    def id(self) -> int:
        """The group's id, a positive integer."""
    def call_later(
        self, delay: float, callback: Callable[..., object], /, *args: Any, **kwargs: Any
    ) -> Timer:
        """``Wheel.call_later``, as a timer of this group."""
    def call_at(
        self, when: float, callback: Callable[..., object], /, *args: Any, **kwargs: Any
    ) -> Timer:
        """``Wheel.call_at``, as a timer of this group."""
    def call_every(
        self,
        period: float,
        callback: Callable[..., object],
        /,
        *args: Any,
        fixed_delay: bool = False,
        first: Optional[float] = None,
        **kwargs: Any,
    ) -> Timer:
        """``Wheel.call_every``, as a timer of this group."""
    def cancel(self) -> bool:
        """Cancels every timer of the group and closes it; True if the group was there."""
    def close(self) -> bool:
        """Closes the group: its timers run on, it takes no more; True if it was open."""
    def __enter__(self) -> "Group": ...
    def __exit__(self, *exc: object) -> Literal[False]: ...
