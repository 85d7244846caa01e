//! timerwheel: a hierarchical timing wheel with O(1) add, delete and reset, a tick thread
//! that sleeps until the next deadline, and an executor that grows worker threads when
//! expired callbacks back up and shrinks them when idle.
//!
//! Two layers:
//! - [`wheel::Wheel`]: the data structure alone. No threads, no clock: the caller passes
//!   time in as a tick number. Usable on its own by event loops that drive time themselves.
//! - [`Runtime`]: a wheel per shard, a tick thread on `CLOCK_MONOTONIC`, and a worker pool.
//!   This is what the C, Python and Go interfaces wrap.
//!
//! ```
//! use std::time::Duration;
//! use timerwheel_core::Runtime;
//!
//! let rt = Runtime::builder().max_workers(2).build().unwrap();
//! let (tx, rx) = std::sync::mpsc::channel();
//! let timer = rt.after(Duration::from_millis(5), move |_| tx.send("fired").unwrap()).unwrap();
//! assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "fired");
//! assert!(!timer.cancel(), "a one-shot that fired cannot be cancelled");
//! rt.shutdown().unwrap();
//! ```
#![warn(missing_docs)]

pub mod durable;
pub mod runtime;
pub mod wheel;

pub use runtime::{
    default_runtime, prefetch, record_callback_failure, BoxTask, Builder, Config, ConfigError,
    Error, Export, ExportedTimer, Group, GroupData, GroupHandle, GroupId, Hold, Lateness, Metrics,
    Missed, PerProcess, PeriodMode, Rejected, Runtime, SharedRuntime, Stats, Task, Timer, TimerId,
    TimerKind, When, LATENESS_BOUNDS_US, MAX_WINDOW, MIN_WINDOW, PROMETHEUS_CONTENT_TYPE,
};
