//! How runtime errors become Python exceptions. The exception classes are defined in
//! Python (`timerwheel/_errors.py`, where they can inherit from both `TimerwheelError`
//! and the built-in they refine) and imported here on first use.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;
use timerwheel_core::durable::DurableError;
use timerwheel_core::Error;

pyo3::import_exception!(timerwheel._errors, TimerwheelError);
pyo3::import_exception!(timerwheel._errors, TimerwheelFullError);
pyo3::import_exception!(timerwheel._errors, TimerwheelClosedError);
pyo3::import_exception!(timerwheel._errors, TimerwheelBusyError);
pyo3::import_exception!(timerwheel._errors, TimerwheelForkedError);
pyo3::import_exception!(timerwheel._errors, TimerwheelGroupClosedError);
pyo3::import_exception!(timerwheel._errors, DurableExistsError);
pyo3::import_exception!(timerwheel._errors, DurableNoHandlerError);
pyo3::import_exception!(timerwheel._errors, DurableStoreError);
#[cfg(feature = "fleet")]
pyo3::import_exception!(timerwheel._errors, FleetUnreachableError);
#[cfg(feature = "fleet")]
pyo3::import_exception!(timerwheel._errors, FleetFencedError);
#[cfg(feature = "fleet")]
pyo3::import_exception!(timerwheel._errors, FleetBufferFullError);

/// The exception for `err`, raised by the operation `what` (e.g. "call_later"): the
/// runtime's message after the operation's name.
pub fn to_py(err: Error, what: &str) -> PyErr {
    exception(err, format!("{what}: {err}"))
}

/// The exception for a refused add; `max_timers` is the wheel's capacity, for the message.
pub fn add_refused(err: Error, what: &str, max_timers: usize) -> PyErr {
    match err {
        Error::Full => exception(err, format!("{what}: {err} (max_timers={max_timers})")),
        other => to_py(other, what),
    }
}

/// The exception of the class that stands for `err`, with `message`.
fn exception(err: Error, message: String) -> PyErr {
    match err {
        Error::Invalid => PyValueError::new_err(message),
        Error::NotFound => TimerwheelError::new_err(message),
        Error::Full => TimerwheelFullError::new_err(message),
        Error::Shutdown => TimerwheelClosedError::new_err(message),
        Error::Busy => TimerwheelBusyError::new_err(message),
        Error::Forked => TimerwheelForkedError::new_err(message),
        Error::GroupClosed => TimerwheelGroupClosedError::new_err(message),
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

/// The exception for a refused durable call `what` (e.g. "durable_add").
pub fn durable_error(err: DurableError, what: &str) -> PyErr {
    let message = format!("{what}: {err}");
    match err {
        DurableError::Exists => DurableExistsError::new_err(message),
        DurableError::NotFound => TimerwheelError::new_err(message),
        DurableError::NoHandler(_) => DurableNoHandlerError::new_err(message),
        DurableError::Store(_) => DurableStoreError::new_err(message),
        DurableError::Invalid(_) => PyValueError::new_err(message),
        DurableError::Runtime(err) => to_py(err, what),
    }
}

/// The exception for a refused fleet call `what` (e.g. "add"): never the connection string
/// (the fleet's errors carry none).
#[cfg(feature = "fleet")]
pub fn fleet_error(err: timerwheel_fleet::FleetError, what: &str) -> PyErr {
    use timerwheel_fleet::FleetError;
    let message = format!("{what}: {err}");
    match err {
        FleetError::Invalid(_) => PyValueError::new_err(message),
        FleetError::Exists { .. } => DurableExistsError::new_err(message),
        FleetError::Fenced { .. } => FleetFencedError::new_err(message),
        FleetError::Connect(_) | FleetError::Unreachable { .. } => {
            FleetUnreachableError::new_err(message)
        }
        FleetError::BufferFull { .. } => FleetBufferFullError::new_err(message),
        FleetError::NoSchema
        | FleetError::SchemaVersion { .. }
        | FleetError::Database(_)
        | FleetError::ShardCount { .. } => DurableStoreError::new_err(message),
    }
}
