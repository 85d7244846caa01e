//! A node of a fleet on PostgreSQL (docs/fleet.md) from Python: `Fleet(...)` with its
//! settings, handlers registered by name (as `Wheel.register_handler`), then `join(conninfo,
//! node_name)`. The node is a `timerwheel_fleet::Runner`.
//!
//! Locks are taken only without the GIL (a handler holds the GIL while it calls the node,
//! and a join or a leave waits for the node's threads).

use std::cell::Cell;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyType;
use timerwheel_core::durable::Ack;
use timerwheel_fleet::{
    Change, ConnectOptions, Fire, FleetError, FleetToken as CoreToken, NewTimer, Outcome, Runner,
    RunnerBuilder, Settings, Status,
};

use crate::convert::seconds;
use crate::durable::{self, ask};
use crate::errors::{
    fleet_error, invalid, wrong_mode, DurableNoHandlerError, TimerwheelBusyError,
    TimerwheelClosedError, TimerwheelError,
};

/// Names one fire of a fleet timer; a fire delivered again (by the shard's next owner) has
/// the same key, name, occurrence and version, under a greater epoch.
#[pyclass(module = "timerwheel._timerwheel", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct FleetToken {
    /// The timer's key.
    #[pyo3(get)]
    key: u64,
    /// The timer's (handler's) name.
    #[pyo3(get)]
    name: String,
    /// The scheduled deadline of this fire, in ms since the Unix epoch.
    #[pyo3(get)]
    occurrence_ms: i64,
    /// The timer's incarnation.
    #[pyo3(get)]
    version: i64,
    /// The key's shard.
    #[pyo3(get)]
    shard: i32,
    /// The shard's epoch when the fire was delivered.
    #[pyo3(get)]
    epoch: i64,
}

#[pymethods]
impl FleetToken {
    #[new]
    fn new(
        key: u64,
        name: String,
        occurrence_ms: i64,
        version: i64,
        shard: i32,
        epoch: i64,
    ) -> Self {
        FleetToken {
            key,
            name,
            occurrence_ms,
            version,
            shard,
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
            "FleetToken(key={}, name={:?}, occurrence_ms={}, version={}, shard={}, epoch={})",
            self.key, self.name, self.occurrence_ms, self.version, self.shard, self.epoch
        )
    }
}

impl FleetToken {
    fn from_core(token: &CoreToken) -> Self {
        let t = token.clone();
        FleetToken::new(
            t.key,
            t.name,
            t.occurrence_ms,
            t.version,
            t.shard,
            t.shard_epoch,
        )
    }

    fn to_core(&self) -> CoreToken {
        CoreToken {
            key: self.key,
            name: self.name.clone(),
            occurrence_ms: self.occurrence_ms,
            version: self.version,
            shard: self.shard,
            shard_epoch: self.epoch,
        }
    }
}

/// Where a node is in its life.
enum Phase {
    Registering(RunnerBuilder),
    Joined(Box<Runner>),
    Left,
}

thread_local! {
    /// Set while a handler runs on this thread: leaving would wait for the handler itself.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// A node of a fleet: register handlers, join, then add, reset, delete and ack timers.
/// ``with fleet.join(conninfo, name):`` leaves on exit.
#[pyclass(module = "timerwheel._timerwheel", frozen)]
pub struct Fleet {
    phase: RwLock<Phase>,
}

/// Calls `handler(token, payload)` on a node's thread (see [`ask`]), marked as a handler's.
fn call_handler(handler: &Py<PyAny>, fire: &Fire) -> Ack {
    IN_HANDLER.with(|h| h.set(true));
    let answer = ask(handler, FleetToken::from_core(&fire.token), &fire.payload);
    IN_HANDLER.with(|h| h.set(false));
    answer
}

/// What a change returns: "written" once committed, "buffered" once kept while PostgreSQL
/// does not answer; a reset or delete of no timer is a `TimerwheelError`.
fn status(status: Status, what: &str, key: u64, name: &str) -> PyResult<&'static str> {
    match status {
        Status::Written(Outcome::Reset { found: false } | Outcome::Deleted { found: false }) => {
            Err(TimerwheelError::new_err(format!(
                "{what}: no timer ({key}, {name:?})"
            )))
        }
        Status::Written(_) => Ok("written"),
        Status::Buffered { .. } => Ok("buffered"),
    }
}

impl Fleet {
    fn read(&self) -> RwLockReadGuard<'_, Phase> {
        self.phase.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `call` on the joined node without the GIL.
    fn with_runner<R: Send>(
        &self,
        py: Python<'_>,
        what: &str,
        call: impl FnOnce(&Runner) -> Result<R, FleetError> + Send,
    ) -> PyResult<R> {
        py.detach(|| match &*self.read() {
            Phase::Joined(runner) => call(runner).map_err(|err| fleet_error(err, what)),
            Phase::Registering(_) => Err(wrong_mode(&format!(
                "{what}: the node has not joined (join() first)"
            ))),
            Phase::Left => Err(TimerwheelClosedError::new_err(format!(
                "{what}: the node left the fleet"
            ))),
        })
    }

    fn change(&self, py: Python<'_>, what: &str, change: Change) -> PyResult<&'static str> {
        let (key, name) = match &change {
            Change::Add { key, name, .. }
            | Change::Reset { key, name, .. }
            | Change::Delete { key, name } => (*key, name.clone()),
        };
        let written = self.with_runner(py, what, |runner| runner.change(change))?;
        status(written, what, key, &name)
    }
}

/// Milliseconds since the Unix epoch of the Unix time `when` (seconds), rounded up: a
/// timer never fires early.
fn unix_ms(name: &str, when: f64) -> PyResult<i64> {
    let ms = (when * 1000.0).ceil();
    if !ms.is_finite() || ms.abs() >= i64::MAX as f64 {
        return Err(invalid(format!("{name} is not a Unix time: {when}")));
    }
    Ok(ms as i64)
}

#[pymethods]
impl Fleet {
    /// A node with its settings (seconds), not joined yet.
    #[new]
    #[pyo3(signature = (*, ttl=10.0, window=60.0, poll=0.5, batch=500, listen=true, buffer=10_000, missed_points="each"))]
    fn new(
        ttl: f64,
        window: f64,
        poll: f64,
        batch: i64,
        listen: bool,
        buffer: usize,
        missed_points: &str,
    ) -> PyResult<Self> {
        let settings = Settings {
            ttl: seconds("ttl", ttl)?,
            window: seconds("window", window)?,
            poll: seconds("poll", poll)?,
            batch,
            listen,
            buffer,
            missed: durable::missed_points(missed_points)?,
            ..Settings::default()
        };
        Ok(Fleet {
            phase: RwLock::new(Phase::Registering(RunnerBuilder::new().settings(settings))),
        })
    }

    /// Registers `handler(token, payload)` for the timers named `name`, before `join()`.
    fn register_handler(
        &self,
        py: Python<'_>,
        name: &str,
        handler: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        if !handler.is_callable() {
            return Err(PyTypeError::new_err("handler must be callable"));
        }
        if name.is_empty() {
            return Err(invalid("a handler's name must not be empty".to_owned()));
        }
        let handler = Arc::new(handler.unbind());
        py.detach(|| {
            let mut phase = self.phase.write().unwrap_or_else(|p| p.into_inner());
            let Phase::Registering(builder) = &mut *phase else {
                return Err(wrong_mode("register_handler() comes before join()"));
            };
            if builder.has_handler(name) {
                return Err(invalid(format!(
                    "a handler is registered under {name:?} already"
                )));
            }
            let registered = std::mem::take(builder);
            *builder = registered.handler(name, move |fire: &Fire| call_handler(&handler, fire));
            Ok(())
        })
    }

    /// Joins the fleet at `conninfo` as `node_name` and starts firing; returns the node
    /// (for ``with``).
    fn join<'py>(
        slf: Bound<'py, Self>,
        conninfo: &str,
        node_name: &str,
    ) -> PyResult<Bound<'py, Self>> {
        let py = slf.py();
        let options = ConnectOptions::parse(conninfo).map_err(|err| match err {
            FleetError::Connect(why) => invalid(format!("join: the connection string: {why}")),
            other => fleet_error(other, "join"),
        })?;
        let fleet = slf.get();
        py.detach(|| {
            let mut phase = fleet.phase.write().unwrap_or_else(|p| p.into_inner());
            let builder = match &*phase {
                Phase::Registering(builder) => builder.clone(),
                Phase::Joined(_) => {
                    return Err(TimerwheelBusyError::new_err(
                        "join: the node joined already",
                    ))
                }
                Phase::Left => {
                    return Err(TimerwheelBusyError::new_err(
                        "join: the node left the fleet",
                    ))
                }
            };
            let runner = builder
                .start(&options, node_name)
                .map_err(|err| fleet_error(err, "join"))?;
            *phase = Phase::Joined(Box::new(runner));
            Ok(())
        })?;
        Ok(slf)
    }

    /// Adds the timer (key, name), first due at the Unix time `first`, then every `period`
    /// seconds (None: once). Returns "written" or "buffered".
    #[pyo3(signature = (key, name, first, payload=b"".as_slice(), period=None, replace=false))]
    #[allow(clippy::too_many_arguments)] // the keyword arguments of add(...)
    fn add(
        &self,
        py: Python<'_>,
        key: u64,
        name: &str,
        first: f64,
        payload: &[u8],
        period: Option<f64>,
        replace: bool,
    ) -> PyResult<&'static str> {
        let period_ms = match period {
            None => 0,
            Some(p) if p > 0.0 => unix_ms("period", p)?,
            Some(p) => return Err(invalid(format!("period must be > 0 seconds, got {p}"))),
        };
        let timer = NewTimer {
            key,
            name,
            payload,
            due_ms: unix_ms("first", first)?,
            period_ms,
            replace,
        };
        let known = self.with_runner(py, "add", |runner| Ok(runner.has_handler(name)))?;
        if !known {
            return Err(DurableNoHandlerError::new_err(format!(
                "add: no handler is registered as {name:?} on this node"
            )));
        }
        self.change(py, "add", Change::add(&timer))
    }

    /// Moves the next deadline of the timer (key, name) to the Unix time `when`.
    fn reset(&self, py: Python<'_>, key: u64, name: String, when: f64) -> PyResult<&'static str> {
        let due_ms = unix_ms("when", when)?;
        self.change(py, "reset", Change::Reset { key, name, due_ms })
    }

    /// Removes the timer (key, name).
    fn delete(&self, py: Python<'_>, key: u64, name: String) -> PyResult<&'static str> {
        self.change(py, "delete", Change::Delete { key, name })
    }

    /// Acknowledges fires; returns how many tokens matched an unacknowledged fire.
    fn ack(&self, py: Python<'_>, tokens: Vec<PyRef<'_, FleetToken>>) -> PyResult<u64> {
        let tokens: Vec<CoreToken> = tokens.iter().map(|t| t.to_core()).collect();
        self.with_runner(py, "ack", |runner| runner.ack(&tokens))
    }

    /// Writes the changes buffered while PostgreSQL did not answer.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.with_runner(py, "flush", Runner::flush_changes)
    }

    /// Changes waiting in the buffer.
    #[getter]
    fn pending(&self, py: Python<'_>) -> PyResult<usize> {
        self.with_runner(py, "pending", |runner| Ok(runner.pending_changes()))
    }

    /// Writes what is buffered, stops firing and hands every shard back at once; a second
    /// call does nothing. While PostgreSQL does not answer and changes wait, it raises and
    /// the node stays.
    fn leave(&self, py: Python<'_>) -> PyResult<()> {
        if IN_HANDLER.with(Cell::get) {
            return Err(TimerwheelBusyError::new_err(
                "leave: called from a handler of the node, it would wait for itself",
            ));
        }
        if matches!(*self.read(), Phase::Joined(_)) {
            // Nothing buffered is dropped: while it cannot be written, the node stays.
            self.with_runner(py, "leave", Runner::flush_changes)?;
        }
        py.detach(|| {
            let mut phase = self.phase.write().unwrap_or_else(|p| p.into_inner());
            match std::mem::replace(&mut *phase, Phase::Left) {
                Phase::Joined(runner) => {
                    drop(phase);
                    runner.leave()
                }
                _ => Ok(()),
            }
        })
        .map_err(|err| fleet_error(err, "leave"))
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyType>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.leave(py)?;
        Ok(false)
    }
}

impl Drop for Fleet {
    /// A node garbage collected without `leave()` leaves without holding the GIL while its
    /// threads stop (a handler under way needs it to finish).
    fn drop(&mut self) {
        let phase = std::mem::replace(
            self.phase.get_mut().unwrap_or_else(|p| p.into_inner()),
            Phase::Left,
        );
        if let Phase::Joined(runner) = phase {
            // Without an interpreter to detach from, the closure is dropped: so is the node.
            let _ = Python::try_attach(|py| py.detach(|| drop(runner)));
        }
    }
}
