//! `timerwheel._timerwheel`: the native part of the Python package `timerwheel`.
//!
//! A thin layer over `timerwheel_core::Runtime<PyTask>`: the runtime's tick thread and
//! worker pool run the Python callbacks, taking the GIL once per batch of due timers. The
//! Python package (`src/timerwheel/`) adds the module-level functions, the context manager,
//! the asyncio helpers and the exception classes.

mod convert;
mod durable;
mod errors;
#[cfg(feature = "fleet")]
mod fleet;
mod gil;
mod group;
mod stats;
mod task;
mod timer;
mod wheel;

use pyo3::prelude::*;

#[pymodule]
fn _timerwheel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<wheel::Wheel>()?;
    m.add_class::<timer::Timer>()?;
    m.add_class::<group::Group>()?;
    m.add_class::<durable::Token>()?;
    #[cfg(feature = "fleet")]
    {
        m.add_class::<fleet::Fleet>()?;
        m.add_class::<fleet::FleetToken>()?;
    }
    m.add_function(wrap_pyfunction!(wheel::_exiting, m)?)?;
    m.add_function(wrap_pyfunction!(wheel::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(wheel::_default_wheel, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
