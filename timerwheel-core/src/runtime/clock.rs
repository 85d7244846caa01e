//! The soft clock: ticks counted on `CLOCK_MONOTONIC` (`Instant`) from the runtime's start.
//! Every reading comes from the real clock, so a late wake-up never accumulates into drift,
//! and deadlines round up to the tick, so nothing fires early.

use std::time::{Duration, Instant, SystemTime};

pub(crate) struct Clock {
    origin: Instant,
    tick_ns: u64,
}

impl Clock {
    pub(crate) fn new(tick: Duration) -> Self {
        Clock {
            origin: Instant::now(),
            tick_ns: tick.as_nanos().max(1) as u64,
        }
    }

    pub(crate) fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    /// Nanoseconds since the origin.
    pub(crate) fn elapsed_ns(&self) -> u64 {
        saturate(self.origin.elapsed().as_nanos())
    }

    /// The tick now: whole ticks elapsed (rounded down).
    pub(crate) fn now_tick(&self) -> u64 {
        self.elapsed_ns() / self.tick_ns
    }

    /// The first tick at or after `delay` from now (rounded up): a timer due at this tick
    /// fires when `now_tick` reaches it, which is never before `delay` has passed.
    pub(crate) fn deadline_after(&self, delay: Duration) -> u64 {
        let due_ns = u64::try_from(delay.as_nanos())
            .ok()
            .and_then(|delay_ns| self.elapsed_ns().checked_add(delay_ns));
        match due_ns {
            Some(due_ns) => due_ns.div_ceil(self.tick_ns),
            // Beyond 584 years: the exact tick matters to no one, and it must not wrap.
            None => u64::MAX,
        }
    }

    /// The deadline for the wall-clock time `when` as the system clock reads now.
    pub(crate) fn deadline_at(&self, when: SystemTime) -> u64 {
        let delay = when
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        self.deadline_after(delay)
    }

    /// Nanoseconds since the origin at which `tick` starts.
    pub(crate) fn tick_start_ns(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.tick_ns)
    }

    /// How long from now until `tick` starts (zero if it has).
    pub(crate) fn until(&self, tick: u64) -> Duration {
        Duration::from_nanos(self.tick_start_ns(tick).saturating_sub(self.elapsed_ns()))
    }

    /// The system clock minus the monotonic one, in nanoseconds: constant unless the
    /// system clock is stepped.
    pub(crate) fn wall_offset_ns(&self) -> i128 {
        let wall = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        wall - self.elapsed_ns() as i128
    }
}

fn saturate(value: u128) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}
