//! The wheel handle C holds: an opaque `tw_wheel` around a runtime of C tasks, or the
//! handle of the shared wheel, which names the shared runtime of whichever process uses it.

use std::ptr;

use timerwheel_core::{Runtime, SharedRuntime};

use crate::durable::{DurableSlot, Settings};
use crate::task::CTask;

/// A timer wheel: its tick thread, its workers and its timers. Opaque; create it with
/// tw_create (or share tw_default) and free it with tw_destroy.
pub struct tw_wheel {
    // Before `runtime`: a store is closed before the runtime it schedules on is dropped.
    durable: DurableSlot,
    runtime: Runtime<CTask>,
}

impl tw_wheel {
    /// Wraps a started runtime, with the durable store's settings (none: no store).
    pub fn new(runtime: Runtime<CTask>, settings: Option<Settings>) -> Self {
        tw_wheel {
            durable: DurableSlot::new(settings),
            runtime,
        }
    }

    /// Its durable store.
    pub fn durable(&self) -> &DurableSlot {
        &self.durable
    }

    /// The runtime inside.
    pub fn runtime(&self) -> &Runtime<CTask> {
        &self.runtime
    }
}

/// The shared wheel's runtime: one per process, started on first use (again in a fork()
/// child), never shut down.
static DEFAULT: SharedRuntime<CTask> = SharedRuntime::new();

/// The shared wheel's runtime in this process; `None` if it could not be started.
pub fn default_runtime() -> Option<&'static Runtime<CTask>> {
    DEFAULT.get().map(|runtime| &**runtime)
}

/// What tw_default() returns: the address of [`DEFAULT`], so that it names the shared wheel
/// of whichever process uses it. It never points to a `tw_wheel`: `ptr::runtime` resolves it.
pub fn default_handle() -> *mut tw_wheel {
    ptr::addr_of!(DEFAULT).cast_mut().cast()
}
