//! The C ABI of timerwheel: `libtimerwheel.so` / `libtimerwheel.a` and
//! `include/timerwheel.h`, generated from this crate by cbindgen.
//!
//! Every function is a thin layer over [`timerwheel_core::Runtime`] with `CTask` as
//! its task type; there is no second implementation. Every exported function runs behind the
//! panic boundary (`boundary.rs`); C pointers become Rust references in `ptr.rs` only.
#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, missing_docs)]

mod boundary;
mod drop_fn;
pub mod durable;
#[cfg(feature = "fleet")]
pub mod fleet;
mod handle;
mod handler;
mod ptr;
mod sized;
mod task;
mod time;
mod types;

// The exported functions, in the order the header lists them: the wheel's life cycle,
// a virtual clock, timers, groups of timers, the export of timers, a callback's report of
// its failure, the figures for an operator, static strings.
pub mod wheel;

pub mod virtual_clock;

pub mod timers;

pub mod batch;

pub mod groups;

pub mod restart;

pub mod callback;

pub mod metrics;

pub mod text;

pub use batch::{tw_delete_many, tw_reset_many};
pub use callback::tw_record_callback_failure;
pub use durable::{
    tw_durable_ack, tw_durable_add, tw_durable_delete, tw_durable_error, tw_durable_flush,
    tw_durable_flush_to, tw_durable_open, tw_durable_reset, tw_handler_register, TW_ACK_LATER,
    TW_ACK_NOW, TW_DURABLE_REPLACE,
};
#[cfg(feature = "fleet")]
pub use fleet::{
    tw_fleet, tw_fleet_ack, tw_fleet_create, tw_fleet_delete, tw_fleet_destroy, tw_fleet_error,
    tw_fleet_flush, tw_fleet_handler, tw_fleet_handler_register, tw_fleet_join, tw_fleet_leave,
    tw_fleet_reset, tw_fleet_settings, tw_fleet_settings_init, tw_fleet_token,
};
pub use groups::{
    tw_group_add, tw_group_add_at, tw_group_add_periodic, tw_group_add_periodic_at, tw_group_close,
    tw_group_create, tw_group_delete,
};
pub use handle::tw_wheel;
pub use metrics::{tw_get_stats_recent, tw_metrics_text};
pub use restart::{tw_export, tw_export_fn, tw_timer_info};
pub use text::{tw_status_str, tw_version, tw_version_number};
pub use timers::{
    tw_add, tw_add_at, tw_add_periodic, tw_add_periodic_at, tw_add_periodic_ns, tw_delete,
    tw_delete_sync, tw_reset,
};
pub use types::{
    tw_callback, tw_clock, tw_config, tw_drop_fn, tw_durability, tw_group_id, tw_handler,
    tw_missed, tw_missed_points, tw_period_mode, tw_stats, tw_status, tw_timer_id, tw_timer_kind,
    tw_token,
};
pub use virtual_clock::{tw_advance, tw_advance_to_next, tw_now_ms};
pub use wheel::{
    tw_config_check, tw_config_init, tw_create, tw_default, tw_destroy, tw_get_stats,
    tw_next_timeout_ms, tw_poll,
};
