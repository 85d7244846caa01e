//! `Timer`: the Python handle of one timer (its id and the runtime it lives in).

use std::sync::Arc;

use pyo3::prelude::*;
use timerwheel_core::{Error, Runtime, TimerId};

use crate::convert::{delay, unix_seconds};
use crate::errors::to_py;
use crate::task::{attached_drops, PyTask};

/// A scheduled timer, returned by `call_later`, `call_at` and `call_every`.
///
/// Dropping the handle does not cancel the timer.
#[pyclass(module = "timerwheel", frozen)]
pub struct Timer {
    rt: Arc<Runtime<PyTask>>,
    id: TimerId,
}

impl Timer {
    pub fn new(rt: Arc<Runtime<PyTask>>, id: TimerId) -> Timer {
        Timer { rt, id }
    }

    /// Its id, when it is a timer of `rt`.
    pub fn id_in(&self, rt: &Arc<Runtime<PyTask>>) -> Option<TimerId> {
        Arc::ptr_eq(&self.rt, rt).then_some(self.id)
    }
}

/// `Ok(true)` for done, `Ok(false)` for a timer that is no longer pending (or a closed
/// wheel, where nothing is pending), an exception for anything else.
pub fn done(result: Result<(), Error>, what: &str) -> PyResult<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(Error::NotFound | Error::Shutdown) => Ok(false),
        Err(err) => Err(to_py(err, what)),
    }
}

#[pymethods]
impl Timer {
    /// The timer's id: a positive integer, unique among the wheel's live timers.
    #[getter]
    fn id(&self) -> u64 {
        self.id.as_u64()
    }

    /// True while the timer will run (again) unless cancelled.
    #[getter]
    fn active(&self) -> bool {
        self.rt.is_pending(self.id)
    }

    /// Stops the timer. True if it was pending and will not start again (also for a
    /// periodic timer cancelled from its own callback); False if it already fired
    /// (one-shot), was cancelled, or its wheel is closed. Does not wait for a run that is
    /// under way on another thread; `cancel_sync` does.
    pub(crate) fn cancel(&self, py: Python<'_>) -> PyResult<bool> {
        done(attached_drops(py, || self.rt.cancel(self.id)), "cancel")
    }

    /// Like `cancel`, then waits (without holding the GIL) until a run of this timer on
    /// another thread has returned. Raises TimerwheelBusyError from the timer's own
    /// callback, which would wait for itself.
    fn cancel_sync(&self, py: Python<'_>) -> PyResult<bool> {
        done(py.detach(|| self.rt.cancel_sync(self.id)), "cancel_sync")
    }

    /// Re-arms a pending timer to fire `delay` seconds from now (a periodic timer keeps
    /// its period). True if it was pending; False if it already fired, was cancelled, or
    /// its wheel is closed.
    fn reset(&self, delay: Bound<'_, PyAny>) -> PyResult<bool> {
        let delay = self::delay("delay", &delay)?;
        done(self.rt.reset(self.id, delay), "reset")
    }

    /// When the timer runs next, as a Unix time in seconds on its wheel's clock (that of
    /// `Wheel.now()`: virtual or real); None when it is not waiting: fired, cancelled, due
    /// and about to run, or a periodic timer whose callback is running.
    fn when(&self) -> Option<f64> {
        self.rt.deadline(self.id).map(unix_seconds)
    }

    fn __repr__(&self) -> String {
        let state = if self.active() { "active" } else { "inactive" };
        format!("<timerwheel.Timer id={} {state}>", self.id.as_u64())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Timer>()
            .is_ok_and(|t| t.get().id == self.id && Arc::ptr_eq(&t.get().rt, &self.rt))
    }

    fn __hash__(&self) -> u64 {
        self.id.as_u64()
    }
}
