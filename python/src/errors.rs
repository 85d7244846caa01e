//! How runtime errors become Python exceptions. The exception classes are defined in
//! Python (`timerwheel/_errors.py`, where they can inherit from both `TimerwheelError`
//! and the built-in they refine) and imported here on first use.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;
use timerwheel_core::Error;

pyo3::import_exception!(timerwheel._errors, TimerwheelError);
pyo3::import_exception!(timerwheel._errors, TimerwheelFullError);
pyo3::import_exception!(timerwheel._errors, TimerwheelClosedError);
pyo3::import_exception!(timerwheel._errors, TimerwheelBusyError);
pyo3::import_exception!(timerwheel._errors, TimerwheelForkedError);

/// The exception for `err`, raised by the operation `what` (e.g. "call_later").
pub fn to_py(err: Error, what: &str) -> PyErr {
    match err {
        Error::Invalid => PyValueError::new_err(format!("{what}: argument out of range")),
        Error::NotFound => TimerwheelError::new_err(format!("{what}: no such pending timer")),
        Error::Full => TimerwheelFullError::new_err(format!("{what}: timer capacity reached")),
        Error::Shutdown => TimerwheelClosedError::new_err(format!("{what}: the wheel is closed")),
        Error::Busy => TimerwheelBusyError::new_err(format!(
            "{what}: called from one of this wheel's own callbacks, it would wait for itself"
        )),
        Error::Forked => TimerwheelForkedError::new_err(format!(
            "{what}: the wheel was created before fork(); create a new one in the child \
             (the module-level functions use a new default wheel there)"
        )),
    }
}

/// The exception for a refused add; `max_timers` is the wheel's capacity, for the message.
pub fn add_refused(err: Error, what: &str, max_timers: usize) -> PyErr {
    match err {
        Error::Full => TimerwheelFullError::new_err(format!(
            "{what}: timer capacity reached, the wheel already holds max_timers={max_timers} pending timers"
        )),
        Error::Invalid => PyValueError::new_err(format!("{what}: delay or period out of range")),
        other => to_py(other, what),
    }
}

/// A `ValueError` naming the argument and what it must be.
pub fn invalid(message: String) -> PyErr {
    PyValueError::new_err(message)
}

/// A `RuntimeError` for a wheel method that needs manual mode (or the opposite).
pub fn wrong_mode(message: &str) -> PyErr {
    PyRuntimeError::new_err(message.to_owned())
}
