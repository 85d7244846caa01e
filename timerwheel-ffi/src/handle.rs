//! The wheel handle C holds: an opaque `tw_wheel` around a runtime of C tasks.

use timerwheel_core::Runtime;

use crate::task::CTask;

/// A timer wheel: its tick thread, its workers and its timers. Opaque; create it with
/// tw_create (or share tw_default) and free it with tw_destroy.
pub struct tw_wheel {
    runtime: Runtime<CTask>,
}

impl tw_wheel {
    /// Wraps a started runtime.
    pub fn new(runtime: Runtime<CTask>) -> Self {
        tw_wheel { runtime }
    }

    /// The runtime inside.
    pub fn runtime(&self) -> &Runtime<CTask> {
        &self.runtime
    }
}
