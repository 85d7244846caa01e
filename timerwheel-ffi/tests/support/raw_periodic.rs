//! `tw_add_periodic` and `tw_add_periodic_at` as the C header declares them: the mode and
//! the missed-point policy as plain numbers (any value a C caller can pass), the wheel as an
//! opaque pointer. Shared by the support modules of the fuzz targets.

use std::ffi::c_void;

use timerwheel::{tw_callback, tw_drop_fn, tw_status, tw_timer_id};

extern "C" {
    pub fn tw_add_periodic(
        w: *mut c_void,
        delay_ms: u64,
        period_ms: u64,
        mode: u32,
        cb: tw_callback,
        user_data: *mut c_void,
        drop: tw_drop_fn,
        out_id: *mut tw_timer_id,
    ) -> tw_status;
    pub fn tw_add_periodic_at(
        w: *mut c_void,
        first_unix_ms: i64,
        period_ms: u64,
        mode: u32,
        missed: u32,
        cb: tw_callback,
        user_data: *mut c_void,
        drop: tw_drop_fn,
        out_id: *mut tw_timer_id,
    ) -> tw_status;
}
