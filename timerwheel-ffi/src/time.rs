//! Milliseconds as C passes them, and durations as C gets them back.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::types::tw_status;

/// A wall-clock time in milliseconds since the Unix epoch (negative = before it).
pub fn unix_time(ms: i64) -> Result<SystemTime, tw_status> {
    let offset = Duration::from_millis(ms.unsigned_abs());
    let when = if ms >= 0 {
        UNIX_EPOCH.checked_add(offset)
    } else {
        UNIX_EPOCH.checked_sub(offset)
    };
    when.ok_or(tw_status::TW_ERR_INVALID)
}

/// Milliseconds since the Unix epoch (negative before it), rounded down, saturating.
pub fn unix_ms(when: SystemTime) -> i64 {
    match when.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => {
            let ms = before.duration().as_nanos().div_ceil(1_000_000);
            i64::try_from(-i128::try_from(ms).unwrap_or(i128::MAX)).unwrap_or(i64::MIN)
        }
    }
}

/// A duration as whole milliseconds, rounded up (a wait never ends before the deadline),
/// clamped to `i64::MAX`.
pub fn ceil_ms(d: Duration) -> i64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    i64::try_from(ms).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_ms_rounds_up() {
        assert_eq!(ceil_ms(Duration::ZERO), 0);
        assert_eq!(ceil_ms(Duration::from_nanos(1)), 1);
        assert_eq!(ceil_ms(Duration::from_micros(1000)), 1);
        assert_eq!(ceil_ms(Duration::from_micros(1001)), 2);
        assert_eq!(ceil_ms(Duration::MAX), i64::MAX);
    }

    #[test]
    fn unix_time_both_sides_of_the_epoch() {
        assert_eq!(
            unix_time(1500),
            Ok(UNIX_EPOCH + Duration::from_millis(1500))
        );
        assert_eq!(
            unix_time(-1500),
            Ok(UNIX_EPOCH - Duration::from_millis(1500))
        );
        assert!(unix_time(i64::MIN).is_ok());
    }

    #[test]
    fn unix_ms_rounds_down_both_sides_of_the_epoch() {
        for ms in [0, 1500, -1500, 1_704_067_200_000] {
            assert_eq!(unix_ms(unix_time(ms).unwrap()), ms);
        }
        assert_eq!(unix_ms(UNIX_EPOCH + Duration::from_micros(1500)), 1);
        assert_eq!(unix_ms(UNIX_EPOCH - Duration::from_micros(1500)), -2);
        assert_eq!(unix_ms(unix_time(i64::MIN).unwrap()), i64::MIN);
        assert_eq!(unix_ms(unix_time(i64::MIN + 1).unwrap()), i64::MIN + 1);
    }
}
