//! Wall-clock milliseconds, the unit the store keeps deadlines in.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `when` in ms since the Unix epoch, rounded up (a durable timer never fires early).
pub fn to_ms(when: SystemTime) -> i64 {
    match when.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos().div_ceil(1_000_000)).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// The instant `ms` after the Unix epoch.
pub fn from_ms(ms: i64) -> SystemTime {
    let magnitude = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        UNIX_EPOCH + magnitude
    } else {
        UNIX_EPOCH - magnitude
    }
}
