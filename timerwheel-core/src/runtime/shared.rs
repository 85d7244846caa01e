//! The process-wide shared runtimes: for each task type, one per process with the default
//! config, started on first use and never shut down. Every interface's shared default is
//! one of them: [`default_runtime`] here, the C ABI's `tw_default`, Python's
//! `default_wheel()`.

use std::sync::Arc;

use super::{BoxTask, Config, PerProcess, Runtime, Task};

/// A process-wide shared runtime of task type `T`, for a `static`: the default config,
/// started on first use in each process (again in a fork() child, which has none of the
/// parent's threads), never shut down (its `shutdown` returns `Busy`).
pub struct SharedRuntime<T: Task = BoxTask> {
    runtime: PerProcess<Option<Arc<Runtime<T>>>>,
}

impl<T: Task> SharedRuntime<T> {
    /// An empty slot.
    pub const fn new() -> Self {
        SharedRuntime {
            runtime: PerProcess::new(),
        }
    }

    /// This process's runtime, started by the first call; `None` if it could not start (no
    /// thread could be created), and then for every later call in this process.
    pub fn get(&'static self) -> Option<&'static Arc<Runtime<T>>> {
        self.runtime
            .get_or_init(|| Runtime::new_shared(Config::default()).ok().map(Arc::new))
            .as_ref()
    }
}

impl<T: Task> Default for SharedRuntime<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The process-wide shared runtime of boxed closures (see [`SharedRuntime`]): one timer
/// thread per process is the right default. A fork() child gets a new one on its first
/// call; the parent's refuses there with `Forked`.
///
/// # Panics
/// When its threads cannot be started.
pub fn default_runtime() -> &'static Runtime<BoxTask> {
    static DEFAULT: SharedRuntime = SharedRuntime::new();
    DEFAULT
        .get()
        .expect("the default runtime could not start its threads")
}
