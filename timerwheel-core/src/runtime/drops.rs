//! A shard's record of the drops under way after cancels: timers whose cancel took their
//! task out and removed their node at once, while the cancelling thread runs the task's
//! drop. `cancel_sync` of such a timer finds no node; it waits until the record is gone, so
//! that it still returns only after the drop has returned, wherever that runs.
//!
//! Without a record, the node of such a timer lingers, read as running, until the drop has
//! returned and the canceller takes the shard's lock a second time to remove it. That second
//! pass costs a delete more than the first: its atomic instructions wait for the stores of
//! the drop (a box freed, memory the cache had to fetch), and the caller's next loads wait
//! for them. Clearing a record is a plain store. A shard holds a few records; a cancel that
//! finds them all in use leaves its node to linger as before.

use std::time::Duration;

use super::sync::atomic::{AtomicU64, Ordering::*};
use super::TimerId;

/// How many drops a shard records at once.
const RECORDS: usize = 8;

/// The ids of the timers whose drops are under way (0: a free record).
pub(crate) struct DropsUnderWay {
    ids: [AtomicU64; RECORDS],
}

/// A drop recorded as under way, until this is dropped (after the task's drop returned).
pub(crate) struct DropRecord<'a> {
    id: &'a AtomicU64,
}

impl DropsUnderWay {
    pub(crate) fn new() -> Self {
        DropsUnderWay {
            ids: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Records the drop of timer `id` as under way; `None` when every record is in use.
    /// Only the holder of the shard's lock records, so no two threads take one record; the
    /// lock's release publishes it to the next holder, who may then look for it.
    pub(crate) fn record(&self, id: TimerId) -> Option<DropRecord<'_>> {
        let free = self.ids.iter().find(|record| record.load(Relaxed) == 0)?;
        free.store(id.as_u64(), Relaxed);
        Some(DropRecord { id: free })
    }

    /// Whether the drop of timer `id` is recorded as under way.
    pub(crate) fn is_under_way(&self, id: TimerId) -> bool {
        self.ids
            .iter()
            .any(|record| record.load(Acquire) == id.as_u64())
    }

    /// Returns once the drop of timer `id` is no longer recorded as under way (at once when
    /// it is not). The drop runs the user's code, which may take long, and waits are rare:
    /// it polls, backing off to a millisecond.
    pub(crate) fn wait_for(&self, id: TimerId) {
        let mut round = 0;
        while self.is_under_way(id) {
            pause(round);
            round += 1;
        }
    }
}

impl Drop for DropRecord<'_> {
    fn drop(&mut self) {
        // Release: a waiter that sees the record gone sees what the drop did.
        self.id.store(0, Release);
    }
}

/// A pause in a poll: a yield, then sleeps growing from 10 us to 1 ms.
fn pause(round: u32) {
    if cfg!(loom) || round < 16 {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        std::thread::yield_now();
    } else {
        let micros = 10u64 << (round - 16).min(7);
        std::thread::sleep(Duration::from_micros(micros.min(1_000)));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn id(raw: u64) -> TimerId {
        TimerId::from_u64(raw).unwrap()
    }

    #[test]
    fn a_record_lasts_until_dropped_and_is_then_free_again() {
        let drops = DropsUnderWay::new();
        let record = drops.record(id(7)).unwrap();
        assert!(drops.is_under_way(id(7)));
        assert!(!drops.is_under_way(id(8)));
        drop(record);
        assert!(!drops.is_under_way(id(7)));
        let records: Vec<_> = (1..=RECORDS as u64)
            .map(|raw| drops.record(id(raw)))
            .collect();
        assert!(
            records.iter().all(Option::is_some),
            "every record is free again"
        );
    }

    #[test]
    fn with_every_record_in_use_none_is_taken() {
        let drops = DropsUnderWay::new();
        let _records: Vec<_> = (1..=RECORDS as u64)
            .map(|raw| drops.record(id(raw)).unwrap())
            .collect();
        assert!(drops.record(id(100)).is_none());
        assert!(!drops.is_under_way(id(100)));
    }

    #[test]
    fn a_wait_returns_once_the_drop_ends_on_another_thread() {
        let drops = DropsUnderWay::new();
        let ended = std::sync::atomic::AtomicBool::new(false);
        let record = drops.record(id(3)).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                ended.store(true, Relaxed);
                drop(record);
            });
            drops.wait_for(id(3));
            assert!(
                ended.load(Relaxed),
                "the wait returned before the drop ended"
            );
        });
    }
}
