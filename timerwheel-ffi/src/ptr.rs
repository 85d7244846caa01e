//! Where C pointers become Rust references: the wheel handle, the config and the out
//! pointers. A NULL pointer is `TW_ERR_INVALID`; the rest is the C caller's contract, stated
//! in the header (a wheel pointer comes from tw_create or tw_default and is not yet
//! destroyed; out pointers are valid for one write).

use std::marker::PhantomData;
use std::ptr::NonNull;

use timerwheel_core::{Config, Runtime};

use crate::durable::{settings, Settings};
use crate::handle::{default_handle, default_runtime, tw_wheel};
use crate::sized::{read_sized, write_sized, SizedStruct};
use crate::task::CTask;
use crate::types::{tw_config, tw_status};

/// The runtime behind `w`: the shared wheel's runtime of this process for the handle
/// tw_default() gives out (`TW_ERR_INTERNAL` if it could not be started in this process,
/// a fork() child); `TW_ERR_INVALID` for NULL.
///
/// # Safety
/// `w` is NULL, the handle of tw_default(), or a live wheel from tw_create, not destroyed
/// during `'a`.
pub unsafe fn runtime<'a>(w: *const tw_wheel) -> Result<&'a Runtime<CTask>, tw_status> {
    if w == default_handle().cast_const() {
        return default_runtime().ok_or(tw_status::TW_ERR_INTERNAL);
    }
    // SAFETY: by this function's contract, any other non-NULL `w` points to a live wheel.
    let wheel = unsafe { w.as_ref() }.ok_or(tw_status::TW_ERR_INVALID)?;
    Ok(wheel.runtime())
}

/// The configuration `cfg` describes, checked; the defaults for NULL and for the fields past
/// the caller's size (sized.rs).
///
/// # Safety
/// `cfg` is NULL or points to a `tw_config` readable for as many bytes as its size says.
pub unsafe fn config(cfg: *const tw_config) -> Result<(Config, Option<Settings>), ConfigFault> {
    let Some(cfg) = NonNull::new(cfg.cast_mut()) else {
        return Ok((Config::default(), None));
    };
    let defaults = tw_config::from(&Config::default());
    // SAFETY: by this function's contract.
    let cfg = unsafe { read_sized(cfg, defaults) }.map_err(|_| {
        ConfigFault(
            "size, or a field past this library's tw_config, is not valid: fill the \
                     struct with tw_config_init"
                .to_owned(),
        )
    })?;
    let config = Config::try_from(&cfg).map_err(|_| {
        let (clock, start) = (cfg.clock, cfg.virtual_start_unix_ms);
        ConfigFault(format!(
            "clock {clock} (virtual_start_unix_ms {start}) is not valid: clock is \
             TW_CLOCK_MONOTONIC or TW_CLOCK_VIRTUAL"
        ))
    })?;
    config.validate().map_err(|e| ConfigFault(e.to_string()))?;
    // SAFETY: store_path is NULL or NUL-terminated (tw_create's contract).
    let settings = unsafe { settings(&cfg) }.map_err(ConfigFault)?;
    Ok((config, settings))
}

/// Why a `tw_config` is refused (`TW_ERR_INVALID`): its layout, or a field out of range.
#[derive(Debug)]
pub struct ConfigFault(pub String);

impl From<ConfigFault> for tw_status {
    fn from(_: ConfigFault) -> Self {
        tw_status::TW_ERR_INVALID
    }
}

/// An out pointer checked for NULL before anything else happens, written once at the end.
pub struct Out<'a, T> {
    ptr: NonNull<T>,
    _borrow: PhantomData<&'a mut T>,
}

impl<T> Out<'_, T> {
    /// `TW_ERR_INVALID` for NULL.
    ///
    /// # Safety
    /// `ptr` is NULL or valid for writing one `T` (it may be uninitialized).
    pub unsafe fn new(ptr: *mut T) -> Result<Self, tw_status> {
        let ptr = NonNull::new(ptr).ok_or(tw_status::TW_ERR_INVALID)?;
        Ok(Out {
            ptr,
            _borrow: PhantomData,
        })
    }

    /// Writes the result (without reading or dropping what was there).
    pub fn put(self, value: T) {
        // SAFETY: `new`'s contract: the pointer is non-NULL and valid for one write.
        unsafe { self.ptr.as_ptr().write(value) }
    }
}

impl<T: SizedStruct> Out<'_, T> {
    /// Writes no more of the result than the caller's size field says (sized.rs).
    pub fn put_sized(self, value: T) -> Result<(), tw_status> {
        // SAFETY: `new`'s contract: the pointer is non-NULL and valid for writing the
        // caller's struct, which is as large as its size field says.
        unsafe { write_sized(self.ptr, value) }
    }
}
