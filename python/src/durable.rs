//! Durable timers (docs/durable.md) of a `_Wheel`: the store named in the wheel's config,
//! handlers by name (Python callables), and the calls on the open store.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use timerwheel_core::durable::{
    Ack, Durable, DurableBuilder, DurableError, DurableTimer, Fired, MissedPoints, Mode,
    Token as CoreToken,
};
use timerwheel_core::Runtime;

use crate::errors::{durable_error, invalid, wrong_mode};
use crate::task::PyTask;

/// Names one fire of a durable timer; a fire delivered again after a restart has the same
/// token. Store it with the fire's effect under a unique constraint, then `durable_ack` it.
#[pyclass(module = "timerwheel._timerwheel", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token {
    /// The timer's key.
    #[pyo3(get)]
    key: u64,
    /// The timer's (handler's) name.
    #[pyo3(get)]
    name: String,
    /// The scheduled deadline of this fire, in ms since the Unix epoch.
    #[pyo3(get)]
    occurrence_ms: i64,
    /// The incarnation of the timer (a replaced or re-added timer has a new one).
    #[pyo3(get)]
    epoch: u64,
}

#[pymethods]
impl Token {
    #[new]
    fn new(key: u64, name: String, occurrence_ms: i64, epoch: u64) -> Self {
        Token {
            key,
            name,
            occurrence_ms,
            epoch,
        }
    }

    /// The scheduled deadline as a Unix time in seconds.
    #[getter]
    fn occurrence(&self) -> f64 {
        self.occurrence_ms as f64 / 1000.0
    }

    fn __repr__(&self) -> String {
        format!(
            "Token(key={}, name={:?}, occurrence_ms={}, epoch={})",
            self.key, self.name, self.occurrence_ms, self.epoch
        )
    }
}

impl Token {
    fn from_core(token: &CoreToken) -> Self {
        Token::new(
            token.key,
            token.name.clone(),
            token.occurrence_ms,
            token.epoch,
        )
    }

    fn to_core(&self) -> CoreToken {
        CoreToken {
            key: self.key,
            name: self.name.clone(),
            occurrence_ms: self.occurrence_ms,
            epoch: self.epoch,
        }
    }
}

/// The batch and the delay of `Wheel(store_path=...)` without store_batch, store_delay:
/// the library's async defaults.
const DEFAULT_BATCH: usize = 1000;
const DEFAULT_DELAY_S: f64 = 0.01;

/// Adds the durable settings of `Wheel()` without arguments to `defaults()`'s dict.
pub fn defaults(dict: &Bound<'_, PyDict>) -> PyResult<()> {
    dict.set_item("store_path", None::<String>)?;
    dict.set_item("durability", "async")?;
    dict.set_item("store_batch", DEFAULT_BATCH)?;
    dict.set_item("store_delay", DEFAULT_DELAY_S)?;
    dict.set_item("missed_points", "each")
}

/// The store's settings from `Wheel(store_path=..., durability=..., ...)`.
pub struct StoreConfig {
    pub path: String,
    pub mode: Mode,
    pub missed: MissedPoints,
}

impl StoreConfig {
    /// The settings, or None without a store path; a ValueError for a bad one.
    pub fn parse(
        path: Option<String>,
        durability: &str,
        batch: Option<usize>,
        delay: Option<f64>,
        missed: &str,
    ) -> PyResult<Option<StoreConfig>> {
        let Some(path) = path else { return Ok(None) };
        let batch = batch.unwrap_or(DEFAULT_BATCH);
        if batch == 0 {
            return Err(invalid("store_batch must be at least 1".to_owned()));
        }
        let mode = match durability {
            "async" => Mode::Async {
                batch,
                delay: Duration::try_from_secs_f64(delay.unwrap_or(DEFAULT_DELAY_S))
                    .map_err(|_| invalid("store_delay must be seconds >= 0".to_owned()))?,
            },
            "sync" => Mode::Sync { batch },
            other => {
                return Err(invalid(format!(
                    "durability must be 'async' or 'sync', got {other:?}"
                )))
            }
        };
        let missed = missed_points(missed)?;
        Ok(Some(StoreConfig { path, mode, missed }))
    }
}

/// The policy `missed_points="each"` / `"coalesce"` names (a durable wheel's and a fleet
/// node's); a ValueError for any other name.
pub fn missed_points(name: &str) -> PyResult<MissedPoints> {
    match name {
        "each" => Ok(MissedPoints::Each),
        "coalesce" => Ok(MissedPoints::Coalesce),
        other => Err(invalid(format!(
            "missed_points must be 'each' or 'coalesce', got {other:?}"
        ))),
    }
}

/// A wheel's durable store: the handlers until it is opened, then the open store.
pub enum DurableSlot {
    /// No store_path in the wheel's config.
    Off,
    Registering(StoreConfig, DurableBuilder),
    Open(Durable<PyTask>),
    Closed,
}

impl DurableSlot {
    pub fn new(config: Option<StoreConfig>) -> Mutex<DurableSlot> {
        Mutex::new(match config {
            Some(config) => DurableSlot::Registering(config, DurableBuilder::default()),
            None => DurableSlot::Off,
        })
    }
}

fn lock(slot: &Mutex<DurableSlot>) -> MutexGuard<'_, DurableSlot> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn no_store(what: &str) -> PyErr {
    wrong_mode(&format!("{what}() needs a Wheel(store_path=...)"))
}

/// Why a call found no open store.
enum NotOpen {
    /// No store_path in the wheel's config.
    Off,
    /// Not opened yet, or closed.
    NotNow,
    /// `durable_open` on a store opened already.
    OpenAlready,
}

impl NotOpen {
    fn error(self, what: &str) -> PyErr {
        match self {
            NotOpen::Off => no_store(what),
            NotOpen::NotNow => wrong_mode(&format!("{what}() needs durable_open() first")),
            NotOpen::OpenAlready => wrong_mode(&format!("{what}(): the store is open already")),
        }
    }
}

/// Runs `call` on the slot under its lock, without the GIL: the lock is taken after the
/// GIL is let go and let go before the GIL is taken back, so a thread that holds the GIL
/// never waits for one that holds the slot (which may need the GIL to go on: a handler, a
/// callback, the thread itself on its way back).
fn in_slot<R: Send>(
    py: Python<'_>,
    slot: &Mutex<DurableSlot>,
    call: impl FnOnce(&mut DurableSlot) -> R + Send,
) -> R {
    py.detach(|| call(&mut lock(slot)))
}

/// Calls `handler(token, payload)` on a worker thread; its truth says "acknowledge now".
/// A handler that raises is reported (`sys.unraisablehook`) and its fire stays
/// unacknowledged: it is delivered again after a restart.
fn call_handler(handler: &Py<PyAny>, fired: &Fired<'_>) -> Ack {
    ask(handler, Token::from_core(fired.token), fired.payload)
}

/// Calls `handler(token, payload)` (a durable or a fleet timer's), taking the GIL: its truth
/// says "acknowledge now"; an exception is reported (`sys.unraisablehook`) and the fire
/// stays unacknowledged.
pub fn ask<T>(handler: &Py<PyAny>, token: T, payload: &[u8]) -> Ack
where
    T: for<'py> IntoPyObject<'py>,
{
    let answer = Python::try_attach(|py| {
        let payload = PyBytes::new(py, payload);
        match handler.call1(py, (token, payload)) {
            Ok(result) => result.is_truthy(py).unwrap_or(false),
            Err(err) => {
                err.write_unraisable(py, Some(handler.bind(py)));
                false
            }
        }
    });
    if answer == Some(true) {
        Ack::Now
    } else {
        Ack::Later
    }
}

pub fn register(slot: &Mutex<DurableSlot>, name: &str, handler: Bound<'_, PyAny>) -> PyResult<()> {
    if !handler.is_callable() {
        return Err(PyTypeError::new_err("handler must be callable"));
    }
    let handler = handler.unbind();
    match &mut *lock(slot) {
        DurableSlot::Registering(_, builder) => {
            let registered =
                builder.register(name, Arc::new(move |fired| call_handler(&handler, fired)));
            if registered {
                Ok(())
            } else {
                Err(invalid(format!(
                    "a handler is registered under {name:?} already"
                )))
            }
        }
        DurableSlot::Off => Err(no_store("register_handler")),
        _ => Err(wrong_mode("register_handler() comes before durable_open()")),
    }
}

pub fn open(py: Python<'_>, slot: &Mutex<DurableSlot>, rt: &Arc<Runtime<PyTask>>) -> PyResult<()> {
    // The restore may run handlers, which take the GIL.
    let opened = in_slot(py, slot, |slot| {
        let (config, builder) = match slot {
            DurableSlot::Registering(config, builder) => (config, builder.clone()),
            DurableSlot::Off => return Err(NotOpen::Off),
            _ => return Err(NotOpen::OpenAlready),
        };
        let (path, mode, missed) = (config.path.clone(), config.mode, config.missed);
        let opened = builder
            .mode(mode)
            .missed(missed)
            .open_sqlite(Arc::clone(rt), path);
        Ok(opened.map(|durable| *slot = DurableSlot::Open(durable)))
    });
    let opened = opened.map_err(|not_open| not_open.error("durable_open"))?;
    opened.map_err(|err| durable_error(err, "durable_open"))
}

/// Runs `call` on the open store, without the GIL (a sync-mode change waits for its
/// commit).
pub fn with_open<R: Send>(
    py: Python<'_>,
    slot: &Mutex<DurableSlot>,
    what: &str,
    call: impl FnOnce(&Durable<PyTask>) -> Result<R, DurableError> + Send,
) -> PyResult<R> {
    let called = in_slot(py, slot, |slot| match slot {
        DurableSlot::Open(durable) => Ok(call(durable)),
        DurableSlot::Off => Err(NotOpen::Off),
        _ => Err(NotOpen::NotNow),
    });
    let called = called.map_err(|not_open| not_open.error(what))?;
    called.map_err(|err| durable_error(err, what))
}

pub fn add(py: Python<'_>, slot: &Mutex<DurableSlot>, timer: DurableTimer<'_>) -> PyResult<()> {
    with_open(py, slot, "durable_add", |d| d.add(&timer))
}

pub fn ack(
    py: Python<'_>,
    slot: &Mutex<DurableSlot>,
    tokens: Vec<PyRef<'_, Token>>,
) -> PyResult<usize> {
    let tokens: Vec<CoreToken> = tokens.iter().map(|t| t.to_core()).collect();
    with_open(py, slot, "durable_ack", |d| d.ack(&tokens))
}

pub fn stats<'py>(py: Python<'py>, slot: &Mutex<DurableSlot>) -> PyResult<Bound<'py, PyDict>> {
    let s = with_open(py, slot, "durable_stats", |d| d.stats())?;
    let dict = PyDict::new(py);
    dict.set_item("last_seq", s.last_seq)?;
    dict.set_item("durable_seq", s.durable_seq)?;
    dict.set_item("sink_failures", s.sink_failures)?;
    dict.set_item("timers", s.timers)?;
    dict.set_item("unacked_fires", s.unacked_fires)?;
    dict.set_item("redelivered", s.redelivered)?;
    dict.set_item("commits", s.commits)?;
    dict.set_item("acks", s.acks)?;
    dict.set_item("pending_events", s.pending_events())?;
    Ok(dict)
}

/// At close, once no callback runs any more (a handler's acknowledgement is in the
/// journal): commits what is queued and leaves every durable timer in the store.
pub fn close(py: Python<'_>, slot: &Mutex<DurableSlot>) {
    in_slot(py, slot, |slot| {
        drop(std::mem::replace(slot, DurableSlot::Closed))
    });
}
