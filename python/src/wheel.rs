//! `_Wheel`: one runtime and its methods, the native base of `timerwheel.Wheel`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyTuple, PyType};
use timerwheel_core::durable::DurableTimer;
use timerwheel_core::{
    Config, Error, ExportedTimer, Missed, PerProcess, PeriodMode, Rejected, Runtime, SharedRuntime,
    TimerId, TimerKind, MAX_WINDOW, MIN_WINDOW,
};

use crate::convert::{as_seconds, config_dict, delay, period, unix_seconds, unix_time, WheelArgs};
use crate::durable::{self, DurableSlot, StoreConfig, Token};
use crate::errors::{add_refused, invalid, to_py, wrong_mode};
use crate::group::Group;
use crate::stats::stats_dict;
use crate::task::{attached_drops, CallParts, PyTask};
use crate::timer::{done, Timer};

/// The native wheel: a timerwheel runtime (tick thread and worker pool) running Python
/// callbacks. Use `timerwheel.Wheel`, which adds the context manager and asyncio helpers.
#[pyclass(name = "_Wheel", module = "timerwheel._timerwheel", subclass, frozen)]
pub struct Wheel {
    rt: Arc<Runtime<PyTask>>,
    closed: AtomicBool,
    durable: Mutex<DurableSlot>,
}

/// The start of the virtual clock `Wheel(virtual_clock=...)` asks for: a Unix time in
/// seconds, True for the system clock's time now, None or False for the real clock.
fn virtual_start(value: Option<Bound<'_, PyAny>>) -> PyResult<Option<SystemTime>> {
    match value {
        None => Ok(None),
        Some(flag) if flag.is_instance_of::<PyBool>() => {
            Ok(flag.is_truthy()?.then(SystemTime::now))
        }
        Some(start) => unix_time(start.extract::<f64>()?).map(Some),
    }
}

/// The task for `callback(*args, **kwargs)`, or a TypeError if it cannot be called.
pub(crate) fn task(
    callback: Bound<'_, PyAny>,
    args: Option<Bound<'_, PyTuple>>,
    kwargs: Option<Bound<'_, PyDict>>,
) -> PyResult<PyTask> {
    if !callback.is_callable() {
        let kind = callback.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "callback must be callable, got an object of type {kind}"
        )));
    }
    Ok(PyTask::new(callback, args, kwargs))
}

/// The two first positional arguments of a call (borrowed from its tuple), and the
/// callback's arguments after them.
type Split<'a, 'py> = (
    Borrowed<'a, 'py, PyAny>,
    Borrowed<'a, 'py, PyAny>,
    Option<Bound<'py, PyTuple>>,
);

/// The two positional-only parameters `names` of the method `what` of `_Wheel` and the
/// callback's positional arguments after them (None when there are none), from the tuple of
/// every positional argument; the TypeError of a call without them as Python words it.
fn two_first<'a, 'py>(
    args: &'a Bound<'py, PyTuple>,
    what: &str,
    names: [&str; 2],
) -> PyResult<Split<'a, 'py>> {
    let given = args.len();
    if given < 2 {
        let missing = match given {
            0 => format!(
                "2 required positional arguments: '{}' and '{}'",
                names[0], names[1]
            ),
            _ => format!("1 required positional argument: '{}'", names[1]),
        };
        return Err(PyTypeError::new_err(format!(
            "_Wheel.{what}() missing {missing}"
        )));
    }
    let rest = (given > 2).then(|| args.get_slice(2, given));
    Ok((args.get_borrowed_item(0)?, args.get_borrowed_item(1)?, rest))
}

/// The period and the first delay of `call_every(period, ..., first=...)`: one period when
/// `first` is not given.
pub(crate) fn every(
    period: &Bound<'_, PyAny>,
    first: Option<Bound<'_, PyAny>>,
) -> PyResult<(Duration, Duration)> {
    let period = self::period(period)?;
    let first = first.map_or(Ok(period), |f| delay("first", &f))?;
    Ok((period, first))
}

/// The handle of a timer accepted by `rt`, or the exception for a refused one (whose task,
/// handed back, is dropped here while the GIL is held).
pub(crate) fn added(
    rt: &Arc<Runtime<PyTask>>,
    result: Result<TimerId, Rejected<PyTask>>,
    what: &str,
) -> PyResult<Timer> {
    match result {
        Ok(id) => Ok(Timer::new(Arc::clone(rt), id)),
        Err(rejected) => Err(add_refused(rejected.error, what, rt.config().max_timers)),
    }
}

/// The mode of `call_every(..., fixed_delay=...)`.
pub(crate) fn mode(fixed_delay: bool) -> PeriodMode {
    if fixed_delay {
        PeriodMode::FixedDelay
    } else {
        PeriodMode::FixedRate
    }
}

/// The policy `missed="run_once"` / `missed="skip"` names.
fn missed(name: &str) -> PyResult<Missed> {
    match name {
        "run_once" => Ok(Missed::RunOnce),
        "skip" => Ok(Missed::Skip),
        other => Err(invalid(format!(
            "missed must be 'run_once' or 'skip', got {other:?}"
        ))),
    }
}

/// One exported timer as the fields of `timerwheel.PendingTimer`: id, due, due_monotonic,
/// period, fixed_delay, at, callback, args, kwargs.
fn pending_record<'py>(
    py: Python<'py>,
    timer: &ExportedTimer,
    (callback, args, kwargs): CallParts,
) -> PyResult<Bound<'py, PyTuple>> {
    let (period, fixed_delay, at) = match timer.kind {
        TimerKind::OneShot => (None, false, None),
        TimerKind::Periodic { period, mode } => (
            Some(period.as_secs_f64()),
            mode == PeriodMode::FixedDelay,
            None,
        ),
        TimerKind::WallClock { when } => (None, false, Some(unix_seconds(when))),
    };
    let kwargs = match kwargs {
        Some(kwargs) => kwargs.bind(py).copy()?,
        None => PyDict::new(py),
    };
    let fields: [Bound<'py, PyAny>; 9] = [
        timer.id.as_u64().into_pyobject(py)?.into_any(),
        unix_seconds(timer.due).into_pyobject(py)?.into_any(),
        timer
            .due_monotonic
            .as_secs_f64()
            .into_pyobject(py)?
            .into_any(),
        period.into_pyobject(py)?.into_any(),
        PyBool::new(py, fixed_delay).to_owned().into_any(),
        at.into_pyobject(py)?.into_any(),
        callback.into_bound(py),
        args.map_or_else(|| PyTuple::empty(py), |args| args.into_bound(py))
            .into_any(),
        kwargs.into_any(),
    ];
    PyTuple::new(py, fields)
}

impl Wheel {
    /// Runs `step` (an advance of the virtual clock) without holding the GIL, which the
    /// callbacks take.
    fn drive_virtual(
        &self,
        py: Python<'_>,
        what: &str,
        step: impl FnOnce(&Runtime<PyTask>) -> Result<usize, Error> + Send,
    ) -> PyResult<usize> {
        match py.detach(|| step(&self.rt)) {
            Err(Error::Invalid) => Err(wrong_mode(&format!(
                "{what}() needs a Wheel(virtual_clock=...)"
            ))),
            result => result.map_err(|err| to_py(err, what)),
        }
    }

    fn added(&self, result: Result<TimerId, Rejected<PyTask>>, what: &str) -> PyResult<Timer> {
        added(&self.rt, result, what)
    }
}

#[pymethods]
impl Wheel {
    /// A wheel with a runtime of its own, or, for the package's `_SharedWheel` (which
    /// has the attribute `_shared_default`), the shared runtime of this process.
    #[new]
    #[classmethod]
    #[pyo3(signature = (tick=None, min_workers=None, max_workers=None, worker_keepalive=None, max_timers=None, manual=None, virtual_clock=None, slow_callback=None, store_path=None, durability="async", store_batch=None, store_delay=None, missed_points="each"))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of Wheel(...)
    fn new(
        cls: &Bound<'_, PyType>,
        tick: Option<Bound<'_, PyAny>>,
        min_workers: Option<i64>,
        max_workers: Option<i64>,
        worker_keepalive: Option<Bound<'_, PyAny>>,
        max_timers: Option<i64>,
        manual: Option<bool>,
        virtual_clock: Option<Bound<'_, PyAny>>,
        slow_callback: Option<f64>,
        store_path: Option<std::path::PathBuf>,
        durability: &str,
        store_batch: Option<usize>,
        store_delay: Option<Bound<'_, PyAny>>,
        missed_points: &str,
    ) -> PyResult<Self> {
        let store_delay = store_delay
            .map(|d| as_seconds("store_delay", &d))
            .transpose()?;
        let store_path = store_path.map(|p| p.to_string_lossy().into_owned());
        let store = StoreConfig::parse(
            store_path,
            durability,
            store_batch,
            store_delay,
            missed_points,
        )?;
        let rt = if cls.hasattr(intern!(cls.py(), "_shared_default"))? {
            let shared = SHARED.get().ok_or(Error::Invalid);
            Arc::clone(shared.map_err(|err| to_py(err, "default_wheel"))?)
        } else {
            let args = WheelArgs {
                tick: tick.map(|t| as_seconds("tick", &t)).transpose()?,
                min_workers,
                max_workers,
                worker_keepalive: worker_keepalive
                    .map(|k| as_seconds("worker_keepalive", &k))
                    .transpose()?,
                max_timers,
                manual,
                virtual_start: virtual_start(virtual_clock)?,
                slow_callback,
            };
            Arc::new(Runtime::new(args.config()?).map_err(|err| to_py(err, "Wheel"))?)
        };
        Ok(Wheel {
            rt,
            closed: AtomicBool::new(false),
            durable: DurableSlot::new(store),
        })
    }

    /// A new group of timers (see `Group`); `on_end()` is called once when it has ended.
    #[pyo3(signature = (on_end=None))]
    fn group(&self, on_end: Option<Bound<'_, PyAny>>) -> PyResult<Group> {
        Group::create(&self.rt, on_end)
    }

    /// Registers `handler(token, payload)` for the durable timers named `name`, before
    /// `durable_open()`.
    fn register_handler(&self, name: &str, handler: Bound<'_, PyAny>) -> PyResult<()> {
        durable::register(&self.durable, name, handler)
    }

    /// Opens the store of `Wheel(store_path=...)`: restores its timers and delivers every
    /// unacknowledged fire again, then journals.
    fn durable_open(&self, py: Python<'_>) -> PyResult<()> {
        durable::open(py, &self.durable, &self.rt)
    }

    /// Adds the durable timer (key, name), first due at the Unix time `first`, then every
    /// `period` seconds (None: once).
    #[pyo3(signature = (key, name, first, payload=b"".as_slice(), period=None, replace=false))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of durable_add(...)
    fn durable_add(
        &self,
        py: Python<'_>,
        key: u64,
        name: &str,
        first: f64,
        payload: &[u8],
        period: Option<Bound<'_, PyAny>>,
        replace: bool,
    ) -> PyResult<()> {
        let period = period.map(|p| self::period(&p)).transpose()?;
        let timer = DurableTimer {
            key,
            name,
            payload,
            first: unix_time(first)?,
            period,
            replace,
        };
        durable::add(py, &self.durable, timer)
    }

    /// Moves the next deadline of the durable timer (key, name) to the Unix time `when`.
    fn durable_reset(&self, py: Python<'_>, key: u64, name: &str, when: f64) -> PyResult<()> {
        let when = unix_time(when)?;
        durable::with_open(py, &self.durable, "durable_reset", |d| {
            d.reset(key, name, when)
        })
    }

    /// Removes the durable timer (key, name).
    fn durable_delete(&self, py: Python<'_>, key: u64, name: &str) -> PyResult<()> {
        durable::with_open(py, &self.durable, "durable_delete", |d| d.delete(key, name))
    }

    /// Acknowledges fires; returns how many tokens matched an unacknowledged fire.
    fn durable_ack(&self, py: Python<'_>, tokens: Vec<PyRef<'_, Token>>) -> PyResult<usize> {
        durable::ack(py, &self.durable, tokens)
    }

    /// Commits everything queued; returns the durable sequence number.
    fn durable_flush(&self, py: Python<'_>) -> PyResult<u64> {
        durable::with_open(py, &self.durable, "durable_flush", |d| d.flush())
    }

    /// Commits the changes up to the sequence `seq`, not those queued after it; returns the
    /// durable sequence number.
    fn durable_flush_to(&self, py: Python<'_>, seq: u64) -> PyResult<u64> {
        durable::with_open(py, &self.durable, "durable_flush_to", |d| d.flush_to(seq))
    }

    /// The store's counters.
    fn durable_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        durable::stats(py, &self.durable)
    }

    /// Runs `callback(*args, **kwargs)` once, `delay` seconds from now (never earlier).
    // The signature is (delay, callback, /, *args, **kwargs), parsed by `two_first` from
    // the tuple of every positional argument: no tuple of the callback's arguments is made
    // when there are none.
    #[pyo3(
        signature = (*args, **kwargs),
        text_signature = "($self, delay, callback, /, *args, **kwargs)"
    )]
    fn call_later(
        &self,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Timer> {
        let (delay, callback, args) = two_first(args, "call_later", ["delay", "callback"])?;
        let delay = self::delay("delay", &delay)?;
        let task = task(callback.to_owned(), args, kwargs)?;
        self.added(self.rt.add(delay, task), "call_later")
    }

    /// Runs `callback(*args, **kwargs)` once at the Unix time `when` (seconds, as
    /// `time.time()`); a time in the past runs at once.
    #[pyo3(signature = (when, callback, /, *args, **kwargs))]
    fn call_at(
        &self,
        when: f64,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        kwargs: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Timer> {
        let when = unix_time(when)?;
        let task = task(callback, Some(args), kwargs)?;
        self.added(self.rt.add_at(when, task), "call_at")
    }

    /// Runs `callback(*args, **kwargs)` every `period` seconds, first after `first`
    /// seconds (default: one period). Runs never overlap. At a fixed rate by default: the
    /// points first, first + period, ... are kept to the nanosecond (the period need not be
    /// a multiple of the tick); a run that returns after the next point is followed at once
    /// by it, and points that passed entirely meanwhile coalesce into that run.
    /// `fixed_delay=True` waits `period` after each run returns.
    #[pyo3(signature = (period, callback, /, *args, fixed_delay=false, first=None, **kwargs))]
    #[allow(clippy::too_many_arguments)]
    fn call_every(
        &self,
        period: Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        fixed_delay: bool,
        first: Option<Bound<'_, PyAny>>,
        kwargs: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Timer> {
        let (period, first) = every(&period, first)?;
        let task = task(callback, Some(args), kwargs)?;
        self.added(
            self.rt.add_periodic(first, period, mode(fixed_delay), task),
            "call_every",
        )
    }

    /// Runs `callback(*args, **kwargs)` every `period` seconds on the schedule `first`,
    /// `first + period`, ... anchored at the Unix time `first` (seconds, on the wheel's
    /// clock): the schedule of a timer exported before a restart. When `first` has passed,
    /// `missed` says what becomes of the points that passed: "run_once" runs once now,
    /// then at the next point; "skip" waits for the next point. A point due right now runs
    /// now either way. From its first run on, it is a timer of `call_every`.
    #[pyo3(signature = (first, period, callback, /, *args, fixed_delay=false, missed="run_once", **kwargs))]
    #[allow(clippy::too_many_arguments)]
    fn call_every_at(
        &self,
        first: f64,
        period: Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        fixed_delay: bool,
        missed: &str,
        kwargs: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Timer> {
        let first = unix_time(first)?;
        let period = self::period(&period)?;
        let missed = self::missed(missed)?;
        let task = task(callback, Some(args), kwargs)?;
        let mode = mode(fixed_delay);
        self.added(
            self.rt.add_periodic_at(first, period, mode, missed, task),
            "call_every_at",
        )
    }

    /// What `cancel()` of each of `timers` returns, in order: the timers of this wheel
    /// are cancelled in one call (a timer given twice: False at its later places), the
    /// others each by its own `cancel()`.
    fn cancel_many(&self, py: Python<'_>, timers: Vec<PyRef<'_, Timer>>) -> PyResult<Vec<bool>> {
        let ids: Vec<TimerId> = timers.iter().filter_map(|t| t.id_in(&self.rt)).collect();
        let mut mine = attached_drops(py, || self.rt.cancel_many(&ids)).into_iter();
        timers
            .iter()
            .map(|timer| match timer.id_in(&self.rt) {
                Some(_) => done(mine.next().expect("a result per id"), "cancel_many"),
                None => timer.cancel(py),
            })
            .collect()
    }

    /// The pending timers at one instant, as `(records, running)`: a tuple of the fields
    /// of `timerwheel.PendingTimer` per timer, in deadline order, and the number of
    /// periodic timers left out because their callback was running. The GIL stays held:
    /// under the wheel's locks only new references are taken (no thread holds those locks
    /// while it waits for the GIL); the records are made after the locks are released.
    fn _export<'py>(&self, py: Python<'py>) -> PyResult<(Vec<Bound<'py, PyTuple>>, usize)> {
        let mut timers = Vec::new();
        let export = self
            .rt
            .export(
                |task| task.call_parts(py),
                |timer, call| timers.extend(call.map(|call| (*timer, call))),
            )
            .map_err(|err| to_py(err, "export"))?;
        let records = timers
            .into_iter()
            .map(|(timer, call)| pending_record(py, &timer, call));
        Ok((records.collect::<PyResult<_>>()?, export.running))
    }

    /// A snapshot of the wheel's counters since it started, as a dict with the keys of
    /// `tw_stats`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.rt.stats())
    }

    /// The counters of the last `window` seconds (1 to 60), with the keys of `stats()`:
    /// the events and lateness since the newest earlier call at least `window` ago (give
    /// or take half a second; since the start when the wheel is younger; `span_ms` says
    /// how long), the gauges as now. ValueError for a window out of its range.
    #[pyo3(signature = (window=None))]
    fn stats_recent<'py>(
        &self,
        py: Python<'py>,
        window: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let window = match window {
            Some(window) => delay("window", &window)?,
            None => MAX_WINDOW,
        };
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&window) {
            return Err(invalid(format!(
                "window must be from 1 to 60 seconds, got {}",
                window.as_secs_f64()
            )));
        }
        stats_dict(py, &self.rt.stats_recent(window))
    }

    /// The wheel's metrics in Prometheus's text format (version 0.0.4), as the C library's
    /// `tw_metrics_text` writes them.
    fn metrics_text(&self) -> String {
        self.rt.prometheus_text()
    }

    /// Shuts the wheel down: waits for callbacks already running (without holding the
    /// GIL, so they can finish), discards pending timers, and returns once no callback
    /// can start any more. Idempotent. Raises TimerwheelBusyError from one of this
    /// wheel's own callbacks, and for the shared default wheel until the interpreter exits.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let at_exit = EXITING.load(Ordering::Acquire);
        let shutdown = || {
            if at_exit {
                self.rt.shutdown_at_exit()
            } else {
                self.rt.shutdown()
            }
        };
        match py.detach(shutdown) {
            Ok(_) | Err(Error::Shutdown) => {
                // After the callbacks: what a handler acknowledged as it returned is
                // committed with the rest.
                durable::close(py, &self.durable);
                self.closed.store(true, Ordering::Release);
                Ok(())
            }
            Err(err) => Err(to_py(err, "close")),
        }
    }

    /// True once `close()` has returned.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Manual mode (`Wheel(manual=True)`): runs the callbacks that are due, on this
    /// thread, and returns how many ran.
    fn poll(&self, py: Python<'_>) -> PyResult<usize> {
        match py.detach(|| self.rt.poll()) {
            Err(Error::Invalid) => Err(wrong_mode("poll() needs a Wheel(manual=True)")),
            result => result.map_err(|err| to_py(err, "poll")),
        }
    }

    /// Seconds until the next deadline (0.0 if one is due), None if no timer is pending.
    fn next_timeout(&self) -> Option<f64> {
        self.rt.next_timeout().map(|d| d.as_secs_f64())
    }

    /// Virtual clock (`Wheel(virtual_clock=...)`): moves time forward by `seconds` and runs
    /// every callback that falls due on the way, on this thread, in deadline order; returns
    /// how many ran.
    fn advance(&self, py: Python<'_>, seconds: Bound<'_, PyAny>) -> PyResult<usize> {
        let by = delay("seconds", &seconds)?;
        self.drive_virtual(py, "advance", |rt| rt.advance(by))
    }

    /// Virtual clock: moves time to the next deadline and runs what is due there; returns
    /// how many ran (0, the clock unmoved, when no timer is pending).
    fn advance_to_next(&self, py: Python<'_>) -> PyResult<usize> {
        self.drive_virtual(py, "advance_to_next", |rt| rt.advance_to_next())
    }

    /// The wheel's clock as a Unix time in seconds (as `time.time()`): the virtual clock,
    /// or the system clock.
    fn now(&self) -> f64 {
        unix_seconds(self.rt.now())
    }
}

/// The settings of `Wheel()` without arguments, as its keyword arguments: the runtime's
/// defaults, in seconds.
#[pyfunction]
pub fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let dict = config_dict(py, &Config::default())?;
    durable::defaults(&dict)?;
    Ok(dict)
}

/// The shared default wheel of this process: an instance of `cls` (the package's
/// `_SharedWheel`), made by the first call in the process (again in a fork() child).
#[pyfunction]
pub fn _default_wheel(py: Python<'_>, cls: &Bound<'_, PyType>) -> PyResult<Py<PyAny>> {
    static WHEEL: PerProcess<PyOnceLock<Py<PyAny>>> = PerProcess::new();
    let wheel = WHEEL
        .get_or_init(PyOnceLock::new)
        .get_or_try_init(py, || cls.call0().map(Bound::unbind))?;
    Ok(wheel.clone_ref(py))
}

/// The runtime of the shared default wheel, one per process.
static SHARED: SharedRuntime<PyTask> = SharedRuntime::new();

/// Set once the interpreter runs its exit handlers (see `_timerwheel._exiting`).
static EXITING: AtomicBool = AtomicBool::new(false);

/// Called by the package's exit handler, before it closes the open wheels: from then on
/// `close()` closes the shared default wheel too, and a garbage-collected wheel is not
/// waited for (below).
#[pyfunction]
pub fn _exiting() {
    EXITING.store(true, Ordering::Release);
}

impl Drop for Wheel {
    /// A wheel that is garbage collected without `close()` shuts down like Rust's
    /// `Runtime` does, without holding the GIL while it waits. From inside one of its
    /// own callbacks, where shutting down would wait for itself, it stops without waiting.
    /// Once the interpreter is exiting, worker threads may no longer be able to attach, so
    /// waiting for them could hang the exit: the runtime is left to the process's end.
    /// (No Python code runs here: a dealloc must not disturb the exception being raised.)
    fn drop(&mut self) {
        let rt = Arc::clone(&self.rt);
        if EXITING.load(Ordering::Acquire) {
            std::mem::forget(rt);
            return;
        }
        let result = match Python::try_attach(|py| py.detach(|| rt.shutdown())) {
            Some(result) => result,
            None => rt.shutdown(),
        };
        if result == Err(Error::Busy) {
            let _ = rt.shutdown_nowait();
        }
    }
}
