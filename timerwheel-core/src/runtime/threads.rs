//! The runtime's threads, started and stopped in one order: the tick thread, then the
//! first workers; at shutdown, the tick thread stops, the executor closes (waiting for
//! running callbacks) or stops (not waiting), then every pending timer is dropped.

use std::cell::Cell;
use std::sync::Arc;

use super::fork;
use super::runtime_state::RuntimeState;
use super::sync;
use super::sync::thread_local;
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
    // Before `Busy`: a drop that this thread's shutdown of the runtime runs is inside it.
    if DISCARDING.with(Cell::get) == inner.id() {
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
    Ok(discard_all(inner))
}

/// [`Runtime::shutdown_nowait_then`](super::Runtime::shutdown_nowait_then): drops every
/// pending timer without waiting for running callbacks; `release` once no thread of the
/// runtime is left.
pub(crate) fn shutdown_nowait<T: Task>(
    inner: &RuntimeState<T>,
    release: impl FnOnce() + Send + 'static,
) -> Result<usize, Error> {
    if inner.shared || inner.exporting_here() {
        return Err(Error::Busy);
    }
    if !inner.begin_shutdown() {
        return Err(Error::Shutdown);
    }
    inner.ticker.stop();
    inner.executor.stop();
    let discarded = discard_all(inner);
    if inner.forked() {
        release(); // the threads it counts are the parent's: none will let go here
    } else {
        inner.executor.when_unused(Box::new(release));
    }
    Ok(discarded)
}

thread_local! {
    /// The runtime whose shutdown drops its pending timers on this thread now (0: none).
    static DISCARDING: Cell<usize> = const { Cell::new(0) };
}

/// The runtime's pending timers dropped, on this thread, as the shutdown's discards: a drop
/// function among them that shuts the runtime down again is `Shutdown` there, not `Busy`.
fn discard_all<T: Task>(inner: &RuntimeState<T>) -> usize {
    let outer = DISCARDING.with(|d| d.replace(inner.id()));
    let discarded = inner.discard_all();
    DISCARDING.with(|d| d.set(outer));
    discarded
}
