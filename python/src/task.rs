//! `PyTask`: a Python callable with its arguments, run by the runtime as a timer's task.
//!
//! The GIL is taken once per batch of due callbacks (`enter_batch`); `run` and `Drop`
//! attach again, which costs nothing while the batch holds it. Dropping the task is the
//! timer's end, so a fired or cancelled timer lets go of its callback and arguments at once.

use std::panic;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use timerwheel_core::{prefetch, BoxTask, Task, TimerId};

use crate::gil;

/// The marker a task unwinds with after a callback raised: the runtime catches it and
/// counts it in `callback_panics`, so a Python exception is counted exactly like a Rust
/// panic without a counter of our own. `resume_unwind` skips the panic hook, so nothing
/// is printed besides what `sys.unraisablehook` prints.
pub struct CallbackRaised;

struct Call {
    func: Py<PyAny>,
    // `None` for no arguments, the common case: nothing to hold or release.
    args: Option<Py<PyTuple>>,
    kwargs: Option<Py<PyDict>>,
}

/// A timer's task: `func(*args, **kwargs)`, or a task of the library's own (a durable
/// timer's dispatch to its handler, which takes the GIL itself).
pub struct PyTask {
    // `None` only inside `drop`, which takes it out to release it while attached, and for
    // a native task.
    call: Option<Call>,
    native: Option<BoxTask>,
}

impl From<BoxTask> for PyTask {
    fn from(task: BoxTask) -> Self {
        PyTask {
            call: None,
            native: Some(task),
        }
    }
}

impl PyTask {
    /// A task that calls `func(*args, **kwargs)`; an empty args tuple or kwargs dict is
    /// not kept.
    pub fn new(
        func: Bound<'_, PyAny>,
        args: Bound<'_, PyTuple>,
        kwargs: Option<Bound<'_, PyDict>>,
    ) -> PyTask {
        let call = Call {
            func: func.unbind(),
            args: (!args.is_empty()).then(|| args.unbind()),
            kwargs: kwargs.filter(|k| !k.is_empty()).map(Bound::unbind),
        };
        PyTask {
            call: Some(call),
            native: None,
        }
    }

    /// New references to its callable, positional and keyword arguments (if any).
    pub fn call_parts(&self, py: Python<'_>) -> Option<CallParts> {
        let call = self.call.as_ref()?;
        let args = call.args.as_ref().map(|args| args.clone_ref(py));
        let kwargs = call.kwargs.as_ref().map(|kwargs| kwargs.clone_ref(py));
        Some((call.func.clone_ref(py), args, kwargs))
    }
}

/// A task's callable, positional arguments and keyword arguments (if any).
pub type CallParts = (Py<PyAny>, Option<Py<PyTuple>>, Option<Py<PyDict>>);

impl Call {
    fn invoke(&self, py: Python<'_>) {
        let func = self.func.bind(py);
        let args = self.args.as_ref().map(|args| args.bind(py));
        let result = match (args, &self.kwargs) {
            (None, None) => func.call0(),
            (Some(args), None) => func.call1(args),
            (args, Some(kwargs)) => {
                let args = args.cloned().unwrap_or_else(|| PyTuple::empty(py));
                func.call(args, Some(kwargs.bind(py)))
            }
        };
        if let Err(err) = result {
            err.write_unraisable(py, Some(func));
            panic::resume_unwind(Box::new(CallbackRaised));
        }
    }
}

impl Task for PyTask {
    fn run(&mut self, id: TimerId) {
        if let Some(native) = &mut self.native {
            native(id);
        } else if let Some(call) = &self.call {
            // None: the interpreter is shutting down; nothing can run any more.
            Python::try_attach(|py| call.invoke(py));
        }
    }

    /// The callable and its arguments are read first when the run starts.
    fn warm(&self) {
        if let Some(call) = &self.call {
            prefetch(call.func.as_ptr());
            if let Some(args) = &call.args {
                prefetch(args.as_ptr());
            }
        }
    }

    fn enter_batch(batch: &mut dyn FnMut()) {
        let keep = gil::should_keep();
        let attached = Python::try_attach(|py| {
            if keep {
                gil::keep(py);
            }
            batch()
        });
        if attached.is_none() {
            batch();
        }
    }
}

impl Drop for PyTask {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            if let Err(call) = release(call) {
                // The interpreter is gone: the references cannot be released any more.
                std::mem::forget(call);
            }
        }
    }
}

/// Releases the references now, attached to the interpreter (a no-op attach when the
/// thread already holds the GIL); hands `call` back when the interpreter is gone.
fn release(call: Call) -> Result<(), Call> {
    let mut slot = Some(call);
    match Python::try_attach(|_py| drop(slot.take())) {
        Some(()) => Ok(()),
        None => Err(slot.take().expect("not taken when not attached")),
    }
}
