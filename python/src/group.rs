//! `Group`: the Python handle of a timer group (docs/contract.md, "Timer groups"): the
//! timers of one session, cancelled together, and a context manager that cancels them when
//! its block ends.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use timerwheel_core::{Error, GroupData, GroupId, Rejected, Runtime, TimerId};

use crate::convert::{delay, unix_time};
use crate::errors::to_py;
use crate::task::PyTask;
use crate::timer::Timer;
use crate::wheel::{added, every, mode, task};

/// A group of timers, made by `Wheel.group()`. Its timers are ordinary timers; `cancel()`
/// cancels all of them at once and closes the group, `close()` lets them run on but takes
/// no more. `on_end`, if given, is called once when the group has ended: after it was
/// cancelled or closed and every timer in it has ended. As a context manager, the group
/// is cancelled when the block ends.
#[pyclass(module = "timerwheel", frozen)]
pub struct Group {
    rt: Arc<Runtime<PyTask>>,
    id: GroupId,
}

/// A group's `on_end`: called when the group's data is dropped, that is when it ends, once
/// the group was accepted (`armed`). An exception goes to `sys.unraisablehook`.
struct OnEnd {
    func: Option<Py<PyAny>>,
    armed: Arc<AtomicBool>,
}

impl Drop for OnEnd {
    fn drop(&mut self) {
        let Some(func) = self.func.take() else { return };
        if !self.armed.load(Relaxed) {
            Python::try_attach(|_py| drop(func)); // refused: released, not called
            return;
        }
        let called = Python::try_attach(|py| {
            if let Err(err) = func.bind(py).call0() {
                err.write_unraisable(py, Some(func.bind(py)));
            }
        });
        if called.is_none() {
            std::mem::forget(func); // the interpreter is gone
        }
    }
}

impl Group {
    /// A new open group of `rt`, calling `on_end` when it ends.
    pub fn create(rt: &Arc<Runtime<PyTask>>, on_end: Option<Bound<'_, PyAny>>) -> PyResult<Group> {
        // The group cannot end before this returns (only its id, given below, closes it).
        let armed = Arc::new(AtomicBool::new(true));
        let func = on_end.map(Bound::unbind);
        let on_end = OnEnd {
            func,
            armed: Arc::clone(&armed),
        };
        match rt.group_create(Box::new(on_end) as GroupData) {
            Ok(id) => Ok(Group {
                rt: Arc::clone(rt),
                id,
            }),
            Err(rejected) => {
                armed.store(false, Relaxed);
                drop(rejected.task);
                Err(to_py(rejected.error, "group"))
            }
        }
    }

    fn added(&self, result: Result<TimerId, Rejected<PyTask>>, what: &str) -> PyResult<Timer> {
        added(&self.rt, result, what)
    }
}

/// `Ok(true)` for done, `Ok(false)` for a group that ended (or a closed wheel).
fn done(result: Result<(), Error>, what: &str) -> PyResult<bool> {
    match result {
        Ok(()) => Ok(true),
        Err(Error::NotFound | Error::Shutdown | Error::GroupClosed) => Ok(false),
        Err(err) => Err(to_py(err, what)),
    }
}

#[pymethods]
impl Group {
    /// The group's id: a positive integer, unique among the wheel's live groups.
    #[getter]
    fn id(&self) -> u64 {
        self.id.as_u64()
    }

    /// `Wheel.call_later`, as a timer of this group. Raises TimerwheelGroupClosedError
    /// once the group is closed or cancelled (TimerwheelError once it has ended).
    #[pyo3(signature = (delay, callback, /, *args, **kwargs))]
    fn call_later(
        &self,
        delay: Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        kwargs: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Timer> {
        let delay = self::delay("delay", &delay)?;
        let task = task(callback, Some(args), kwargs)?;
        self.added(self.rt.group_add(self.id, delay, task), "call_later")
    }

    /// `Wheel.call_at`, as a timer of this group.
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
        self.added(self.rt.group_add_at(self.id, when, task), "call_at")
    }

    /// `Wheel.call_every`, as a timer of this group.
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
        let added = self
            .rt
            .group_add_periodic(self.id, first, period, mode(fixed_delay), task);
        self.added(added, "call_every")
    }

    /// Cancels every timer of the group and closes it (from one of its callbacks too).
    /// True if the group was there; False if it had ended or the wheel is closed.
    fn cancel(&self) -> PyResult<bool> {
        done(self.rt.group_delete(self.id), "cancel")
    }

    /// Closes the group: it takes no more timers, its timers run on, and `on_end` follows
    /// the last. True if it was open; False if it was closed or cancelled already.
    fn close(&self) -> PyResult<bool> {
        done(self.rt.group_close(self.id), "close")
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Cancels the group; exceptions propagate.
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: Bound<'_, PyTuple>) -> PyResult<bool> {
        self.cancel()?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<timerwheel.Group id={}>", self.id.as_u64())
    }
}
