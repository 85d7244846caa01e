//! The exported functions that return static strings.

use std::ffi::{c_char, CStr};

use timerwheel_core::Error;

use crate::boundary::guard_or;
use crate::types::{tw_status, RawStatus};

/// A static, human-readable description of a status; never NULL. A value that is not a
/// tw_status gives "unknown status".
#[no_mangle]
pub extern "C" fn tw_status_str(s: RawStatus) -> *const c_char {
    guard_or(UNKNOWN.as_ptr(), || message(s).as_ptr())
}

/// The library's version, e.g. "0.2.0" (static, never NULL).
#[no_mangle]
pub extern "C" fn tw_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    guard_or(VERSION.as_ptr(), || VERSION.as_ptr()).cast()
}

/// The library's version as one number, (major << 16) | (minor << 8) | patch: 0x000200 for
/// 0.2.0. Compare it with TW_VERSION_NUMBER, the version of the header a program was
/// compiled with: a library at least as new as the header has every function and field the
/// program knows of.
#[no_mangle]
pub extern "C" fn tw_version_number() -> u32 {
    guard_or(VERSION_NUMBER, || VERSION_NUMBER)
}

// VERSION_NUMBER, from the package version (build.rs).
include!(concat!(env!("OUT_DIR"), "/version_number.rs"));

const UNKNOWN: &CStr = c"unknown status";

/// The message of a status: the runtime's own for its errors ([`Error::c_message`]).
fn message(s: RawStatus) -> &'static CStr {
    match s.0 {
        status if status == tw_status::TW_OK as u32 => c"success",
        status if status == tw_status::TW_ERR_INTERNAL as u32 => c"internal error",
        status if status == tw_status::TW_ERR_TOO_SMALL as u32 => c"buffer too small",
        status if status == tw_status::TW_ERR_EXISTS as u32 => {
            c"a durable timer of this key and name exists"
        }
        status if status == tw_status::TW_ERR_NO_HANDLER as u32 => {
            c"no handler is registered under this name"
        }
        status if status == tw_status::TW_ERR_STORE as u32 => {
            c"the durable store refused or failed (tw_durable_error says why)"
        }
        status if status == tw_status::TW_ERR_UNREACHABLE as u32 => {
            c"PostgreSQL did not answer (tw_fleet_error says why)"
        }
        status if status == tw_status::TW_ERR_FENCED as u32 => {
            c"refused: the lease of the shard moved past the token's epoch"
        }
        status => Error::ALL
            .into_iter()
            .find(|&error| tw_status::from(error) as u32 == status)
            .map_or(UNKNOWN, Error::c_message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn text(s: u32) -> &'static str {
        // SAFETY: tw_status_str returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(tw_status_str(RawStatus(s))) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn every_status_has_its_own_message() {
        let all: Vec<_> = (0..15).map(text).collect();
        assert!(all.iter().all(|m| *m != "unknown status"));
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), all.len());
        for error in Error::ALL {
            assert_eq!(text(tw_status::from(error) as u32), error.message());
        }
        assert_eq!(text(15), "unknown status");
        assert_eq!(text(u32::MAX), "unknown status");
    }
}
