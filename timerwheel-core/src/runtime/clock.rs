//! The soft clock: ticks counted on `CLOCK_MONOTONIC` (`Instant`) from the runtime's start.
//! Every reading comes from the real clock, so a late wake-up never accumulates into drift,
//! and deadlines round up to the tick, so nothing fires early.

use std::time::{Duration, Instant, SystemTime};

/// When a timer is due: the tick it fires at, and where in the tick before that one the
/// exact time asked for fell, from 0 (just after the previous tick) to 255 (at `tick`
/// itself). Timers of one tick start in phase order, so the one rounded up the most goes
/// first. Ordered by tick, then phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Deadline {
    pub(crate) tick: u64,
    pub(crate) phase: u8,
}

impl Deadline {
    /// A deadline right at the start of `tick`.
    pub(crate) const fn at_tick(tick: u64) -> Self {
        Deadline {
            tick,
            phase: u8::MAX,
        }
    }
}

pub(crate) struct Clock {
    origin: Instant,
    tick_ns: u64,
    /// Unit tests step the system clock as this runtime sees it, in nanoseconds.
    #[cfg(test)]
    pub(crate) wall_step_ns: std::sync::atomic::AtomicI64,
}

impl Clock {
    pub(crate) fn new(tick: Duration) -> Self {
        Clock {
            origin: Instant::now(),
            tick_ns: tick.as_nanos().max(1) as u64,
            #[cfg(test)]
            wall_step_ns: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// The system clock now.
    pub(crate) fn wall_now(&self) -> SystemTime {
        let now = SystemTime::now();
        #[cfg(test)]
        let now = {
            let step = self.wall_step_ns.load(std::sync::atomic::Ordering::Relaxed);
            let by = Duration::from_nanos(step.unsigned_abs());
            if step < 0 {
                now - by
            } else {
                now + by
            }
        };
        now
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
    pub(crate) fn deadline_after(&self, delay: Duration) -> Deadline {
        let due_ns = u64::try_from(delay.as_nanos())
            .ok()
            .and_then(|delay_ns| self.elapsed_ns().checked_add(delay_ns));
        match due_ns {
            Some(due_ns) => self.deadline_of(due_ns),
            // Beyond 584 years: the exact tick matters to no one, and it must not wrap.
            None => Deadline::at_tick(u64::MAX),
        }
    }

    fn deadline_of(&self, due_ns: u64) -> Deadline {
        let tick = due_ns.div_ceil(self.tick_ns);
        let Some(window_start) = tick.checked_sub(1).map(|t| t * self.tick_ns) else {
            return Deadline::at_tick(0);
        };
        // How far into the tick window ending at `tick` the time falls, in [0, tick_ns).
        let into_window = due_ns - window_start - 1;
        // Ticks are at most a second, so the product cannot saturate.
        let phase = into_window.saturating_mul(256) / self.tick_ns;
        Deadline {
            tick,
            phase: phase.min(255) as u8,
        }
    }

    /// The deadline for the wall-clock time `when` as the system clock reads now.
    pub(crate) fn deadline_at(&self, when: SystemTime) -> Deadline {
        let delay = when
            .duration_since(self.wall_now())
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
        let wall = self
            .wall_now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        wall - self.elapsed_ns() as i128
    }
}

fn saturate(value: u128) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_round_up_and_keep_their_place_within_the_tick() {
        let clock = Clock::new(Duration::from_millis(1));
        let at = |ns| {
            let d = clock.deadline_of(ns);
            (d.tick, d.phase)
        };
        assert_eq!(at(0), (0, 255));
        assert_eq!(at(1), (1, 0), "just after tick 0: rounded up the most");
        assert_eq!(at(500_000), (1, 127));
        assert_eq!(at(1_000_000), (1, 255), "on the tick: not rounded");
        assert_eq!(at(1_000_001), (2, 0));
        assert_eq!(at(u64::MAX).0, u64::MAX.div_ceil(1_000_000));
        assert!(clock.deadline_of(2_100_000) < clock.deadline_of(2_200_000));
        assert!(clock.deadline_of(2_900_000) < clock.deadline_of(3_000_001));
    }
}
