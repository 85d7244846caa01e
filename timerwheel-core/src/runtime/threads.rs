//! The runtime's threads, started and stopped in one order: the tick thread, then the
//! first workers; at shutdown, the tick thread stops, the executor closes (waiting for
//! running callbacks) or stops (not waiting), then every pending timer is dropped.

use std::sync::Arc;

use super::fork;
use super::runtime_state::RuntimeState;
use super::sync;
use super::ticker::ticker_main;
use super::worker::spawn_worker;
use super::{Config, Error, Task};

/// A started runtime: its tick thread and `min_workers` workers unless manual.
pub(crate) fn start<T: Task>(config: Config, shared: bool) -> Result<Arc<RuntimeState<T>>, Error> {
    config.validate()?;
    // A virtual clock has no threads: nothing would move it.
    let manual = config.manual || config.virtual_start.is_some();
    let config = Config { manual, ..config };
    let inner = RuntimeState::new(config, shared);
    fork::register(&inner);
    if !inner.config.manual {
        let ticker = Arc::clone(&inner);
        inner.executor.ticker_started();
        let handle = sync::thread::Builder::new()
            .name("timerwheel-tick".into())
            .spawn(move || ticker_main(ticker))
            .map_err(|_| {
                inner.executor.ticker_exited();
                Error::Invalid
            })?;
        inner.ticker.set_thread(handle.thread().clone());
        inner.executor.adopt(handle);
        for _ in 0..inner.executor.reserve_initial() {
            spawn_worker(&inner);
        }
    }
    Ok(inner)
}

/// [`Runtime::shutdown_at_exit`](super::Runtime::shutdown_at_exit): waits for running
/// callbacks, then drops every pending timer; how many.
pub(crate) fn shutdown<T: Task>(inner: &RuntimeState<T>) -> Result<usize, Error> {
    // Before `Busy`: a runtime shut down already has nothing to wait for, also from its
    // own drops (one that the shutdown's discards run, one that shut it down without
    // waiting) and callbacks.
    if inner.is_shut_down() {
        return Err(Error::Shutdown);
    }
    if inner.would_wait_for_itself() {
        return Err(Error::Busy);
    }
    if !inner.begin_shutdown() {
        return Err(Error::Shutdown);
    }
    inner.ticker.stop();
    if inner.forked() {
        inner.executor.stop();
    } else {
        inner.executor.close();
    }
    Ok(inner.discard_all())
}

/// [`Runtime::shutdown_nowait_then`](super::Runtime::shutdown_nowait_then): drops every
/// pending timer without waiting for running callbacks; `release` once no thread of the
/// runtime is left.
pub(crate) fn shutdown_nowait<T: Task>(
    inner: &RuntimeState<T>,
    release: impl FnOnce() + Send + 'static,
) -> Result<usize, Error> {
    // Before `Busy`, as in `shutdown`: also from an export's function.
    if inner.is_shut_down() {
        return Err(Error::Shutdown);
    }
    if inner.shared || inner.exporting_here() {
        return Err(Error::Busy);
    }
    if !inner.begin_shutdown() {
        return Err(Error::Shutdown);
    }
    inner.ticker.stop();
    inner.executor.stop();
    let discarded = inner.discard_all();
    if inner.forked() {
        release(); // the threads it counts are the parent's: none will let go here
    } else {
        inner.executor.when_unused(Box::new(release));
    }
    Ok(discarded)
}
