//! The soft clock: ticks counted on `CLOCK_MONOTONIC` (`Instant`) from the runtime's start.
//! Every reading comes from the real clock, so a late wake-up never accumulates into drift,
//! and deadlines round up to the tick, so nothing fires early.
//!
//! A virtual clock reads a counter instead, which only [`Clock::move_to`] moves (see
//! `virtual_clock.rs`); its wall clock is its start time plus that counter. The real clock
//! pays one branch on a field set at start for it.
//!
//! The clock's range: readings are nanoseconds since the origin in a `u64` (about 584
//! years). A deadline beyond [`Clock::end_tick`], the last tick that starts at least 1 ms
//! before the end of that range, is held at that tick: it comes due there. (The 1 ms keeps
//! a wait rounded up to the millisecond, as C gets it, inside the range.)

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use super::sync::time::{system_now, Instant};
use super::tsc;

/// When a timer is due: the tick it fires at, and how far before that tick's start the
/// exact time asked for lies, in nanoseconds (`0..tick`: the deadline was rounded up by
/// that much). The exact time is [`Clock::exact_ns`]; ticks are at most a second, so the
/// rounding fits a `u32`. Ordered by exact time: by tick, then the one rounded up the most
/// first, so timers of one tick start in the order of their exact deadlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadline {
    pub(crate) tick: u64,
    pub(crate) rounded_up_ns: u32,
}

impl Deadline {
    /// A deadline no clock reading reaches (past [`Clock::end_tick`]): a periodic timer
    /// whose next point lies beyond the clock's range waits there, and never runs again.
    pub(crate) const NEVER: Deadline = Deadline::at_tick(u64::MAX);

    /// A deadline right at the start of `tick`.
    pub(crate) const fn at_tick(tick: u64) -> Self {
        Deadline {
            tick,
            rounded_up_ns: 0,
        }
    }

    /// A number in the order of deadlines (as [`Ord`]), then of `position` (saturated to
    /// 32 bits), compared in one step: a sort by it, unstable and quick, orders deadlines
    /// as a stable sort does when `position` is each one's place in the list.
    #[inline]
    pub(crate) fn sort_key(self, position: usize) -> u128 {
        let position = u32::try_from(position).unwrap_or(u32::MAX);
        (u128::from(self.tick) << 64)
            | (u128::from(u32::MAX - self.rounded_up_ns) << 32)
            | u128::from(position)
    }

    /// The deadline a [`sort_key`](Self::sort_key) was made of.
    #[inline]
    pub(crate) fn of_sort_key(key: u128) -> Deadline {
        Deadline {
            tick: (key >> 64) as u64,
            rounded_up_ns: u32::MAX - (key >> 32) as u32,
        }
    }
}

impl Ord for Deadline {
    fn cmp(&self, other: &Self) -> Ordering {
        let by_tick = self.tick.cmp(&other.tick);
        by_tick.then(other.rounded_up_ns.cmp(&self.rounded_up_ns))
    }
}

impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

pub(crate) struct Clock {
    origin: Instant,
    /// `CLOCK_MONOTONIC` read just before `origin`, in nanoseconds: where
    /// [`elapsed_ns`](Self::elapsed_ns) and [`tsc::monotonic_ns_at_least`] readings count
    /// from (`origin` is the model's under loom).
    origin_ns: u64,
    tick_ns: u64,
    /// The last tick a deadline is placed at (see the module doc).
    end_tick: u64,
    /// A virtual clock: the wall-clock time at its origin. `None`: the real clock.
    virtual_start: Option<SystemTime>,
    /// A virtual clock's time, in nanoseconds since the origin. Std's atomic under loom
    /// too: the models run the real clock.
    virtual_ns: AtomicU64,
    /// Held by the one thread that moves a virtual clock: advances take turns.
    advancing: Mutex<()>,
    /// Unit tests step the system clock as this runtime sees it, in nanoseconds.
    #[cfg(test)]
    pub(crate) wall_step_ns: std::sync::atomic::AtomicI64,
}

impl Clock {
    pub(crate) fn new(tick: Duration) -> Self {
        tsc::start();
        let origin_ns = tsc::monotonic_ns();
        let tick_ns = tick.as_nanos().max(1) as u64;
        Clock {
            origin: Instant::now(),
            origin_ns,
            tick_ns,
            end_tick: (u64::MAX - 1_000_000) / tick_ns,
            virtual_start: None,
            virtual_ns: AtomicU64::new(0),
            advancing: Mutex::new(()),
            #[cfg(test)]
            wall_step_ns: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// A virtual clock at `start` on its wall clock: it stands still until moved.
    pub(crate) fn new_virtual(tick: Duration, start: SystemTime) -> Self {
        Clock {
            virtual_start: Some(start),
            ..Clock::new(tick)
        }
    }

    pub(crate) fn is_virtual(&self) -> bool {
        self.virtual_start.is_some()
    }

    /// Moves a virtual clock forward to `ns` since the origin (never back).
    pub(crate) fn move_to(&self, ns: u64) {
        debug_assert!(self.is_virtual(), "only a virtual clock moves on demand");
        self.virtual_ns.fetch_max(ns, Relaxed);
    }

    /// The right to move a virtual clock, until the guard is dropped: a second thread that
    /// asks waits for the first.
    pub(crate) fn take_turn(&self) -> MutexGuard<'_, ()> {
        // Callbacks run under it, but their panics are caught: nothing is left half done.
        self.advancing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The last tick a deadline is placed at: later ones are held there.
    pub(crate) fn end_tick(&self) -> u64 {
        self.end_tick
    }

    /// The wall clock now: the system clock, or a virtual clock's own.
    pub(crate) fn wall_now(&self) -> SystemTime {
        let now = match self.virtual_start {
            Some(start) => start + Duration::from_nanos(self.elapsed_ns()),
            None => system_now(),
        };
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

    /// A clock whose origin lies `ago` in the past, for tests of what happens late.
    #[cfg(test)]
    pub(crate) fn started_ago(tick: Duration, ago: Duration) -> Self {
        let clock = Clock::new(tick);
        Clock {
            origin: clock
                .origin
                .checked_sub(ago)
                .expect("the monotonic clock goes back that far"),
            origin_ns: clock.origin_ns - ago.as_nanos() as u64,
            ..clock
        }
    }

    pub(crate) fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    /// Nanoseconds since the origin. Read from `CLOCK_MONOTONIC` as a count of nanoseconds
    /// (cheaper than an `Instant`'s difference); model time under loom.
    #[inline]
    pub(crate) fn elapsed_ns(&self) -> u64 {
        if self.virtual_start.is_some() {
            return self.virtual_ns.load(Relaxed);
        }
        if cfg!(loom) {
            return saturate(self.origin.elapsed().as_nanos());
        }
        tsc::monotonic_ns().saturating_sub(self.origin_ns)
    }

    /// Nanoseconds since the origin, or a little more (never less): the reading deadlines
    /// count from, so that a timer comes at most a couple of microseconds late for it and
    /// never early (see `tsc.rs`). Cheaper than [`elapsed_ns`](Self::elapsed_ns).
    #[inline]
    pub(crate) fn elapsed_ns_at_least(&self) -> u64 {
        if cfg!(loom) || self.virtual_start.is_some() {
            return self.elapsed_ns();
        }
        tsc::monotonic_ns_at_least().saturating_sub(self.origin_ns)
    }

    /// The tick now: whole ticks elapsed (rounded down).
    pub(crate) fn now_tick(&self) -> u64 {
        self.elapsed_ns() / self.tick_ns
    }

    /// The first tick at or after `delay` from now (rounded up): a timer due at this tick
    /// fires when `now_tick` reaches it, which is never before `delay` has passed.
    #[inline]
    pub(crate) fn deadline_after(&self, delay: Duration) -> Deadline {
        let due_ns = u64::try_from(delay.as_nanos())
            .ok()
            .and_then(|delay_ns| self.elapsed_ns_at_least().checked_add(delay_ns));
        match due_ns {
            Some(due_ns) => self.deadline_of(due_ns),
            // Beyond the clock's range: held at its end.
            None => Deadline::at_tick(self.end_tick),
        }
    }

    /// The deadline of the exact time `due_ns` (nanoseconds since the origin): the first
    /// tick at or after it, or the end tick for a time beyond it.
    #[inline]
    pub(crate) fn deadline_of(&self, due_ns: u64) -> Deadline {
        let tick = due_ns.div_ceil(self.tick_ns);
        if tick > self.end_tick {
            return Deadline::at_tick(self.end_tick);
        }
        Deadline {
            tick,
            // Less than a tick, and a tick is at most a second: it fits.
            rounded_up_ns: (tick * self.tick_ns - due_ns) as u32,
        }
    }

    /// [`deadline_of`](Self::deadline_of) for a time given in `u128` nanoseconds.
    pub(crate) fn deadline_of_wide(&self, due_ns: u128) -> Deadline {
        self.deadline_of(u64::try_from(due_ns).unwrap_or(u64::MAX))
    }

    /// The exact time of `deadline` in nanoseconds since the origin (saturating).
    pub(crate) fn exact_ns(&self, deadline: Deadline) -> u64 {
        let tick_start = self.tick_start_ns(deadline.tick);
        tick_start.saturating_sub(u64::from(deadline.rounded_up_ns))
    }

    /// The deadline for the wall-clock time `when` as the system clock reads now. A time
    /// that has passed keeps its exact time, so that timers already due run in the order of
    /// their times: `when` less `wall_offset_ns` (the system clock minus this one, one
    /// reading for every such timer, so that equal times stay equal), down to the origin,
    /// and up to `u32::MAX - 1` ns (4.3 s) before it as tick 0 rounded up by that much
    /// (further back they tie).
    pub(crate) fn deadline_at(&self, when: SystemTime, wall_offset_ns: i64) -> Deadline {
        if let Ok(ahead) = when.duration_since(self.wall_now()) {
            return self.deadline_after(ahead);
        }
        let when_ns = match when.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(after) => after.as_nanos() as i128,
            Err(before) => -(before.duration().as_nanos() as i128),
        };
        let due_ns = (when_ns - i128::from(wall_offset_ns)).min(i128::from(self.elapsed_ns()));
        match u64::try_from(due_ns) {
            Ok(due_ns) => self.deadline_of(due_ns),
            Err(_) => Deadline {
                tick: 0,
                rounded_up_ns: due_ns.unsigned_abs().min(u128::from(u32::MAX - 1)) as u32,
            },
        }
    }

    /// Nanoseconds since the origin at which `tick` starts.
    pub(crate) fn tick_start_ns(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.tick_ns)
    }

    /// How long from now until `tick` starts (zero if it has).
    pub(crate) fn until(&self, tick: u64) -> Duration {
        self.until_ns(self.tick_start_ns(tick))
    }

    /// How long from now until `ns` since the origin (zero if it has passed).
    pub(crate) fn until_ns(&self, ns: u64) -> Duration {
        Duration::from_nanos(ns.saturating_sub(self.elapsed_ns()))
    }

    /// The system clock minus the monotonic one, in nanoseconds: constant unless the
    /// system clock is stepped (and always for a virtual clock).
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
    fn sort_keys_order_deadlines_then_positions_and_give_the_deadline_back() {
        let ticks = [0, 1, 2, u64::MAX - 1, u64::MAX];
        let rounded = [0, 1, 999_999, u32::MAX - 1, u32::MAX];
        let positions = [0, 1, u32::MAX as usize - 1, u32::MAX as usize];
        let all: Vec<(Deadline, usize)> = ticks
            .iter()
            .flat_map(|&tick| {
                rounded.map(|rounded_up_ns| Deadline {
                    tick,
                    rounded_up_ns,
                })
            })
            .flat_map(|deadline| positions.map(|position| (deadline, position)))
            .collect();
        for &(a, at) in &all {
            assert_eq!(Deadline::of_sort_key(a.sort_key(at)), a);
            for &(b, bt) in &all {
                let by_key = a.sort_key(at).cmp(&b.sort_key(bt));
                assert_eq!(by_key, a.cmp(&b).then(at.cmp(&bt)), "{a:?} {at} {b:?} {bt}");
            }
        }
        let beyond = Deadline::at_tick(3).sort_key(u32::MAX as usize + 5);
        assert_eq!(
            beyond,
            Deadline::at_tick(3).sort_key(u32::MAX as usize),
            "saturated"
        );
    }

    #[test]
    fn deadlines_round_up_and_keep_their_exact_time() {
        let clock = Clock::new(Duration::from_millis(1));
        let at = |ns| {
            let d = clock.deadline_of(ns);
            (d.tick, d.rounded_up_ns)
        };
        assert_eq!(at(0), (0, 0));
        assert_eq!(
            at(1),
            (1, 999_999),
            "just after tick 0: rounded up the most"
        );
        assert_eq!(at(500_000), (1, 500_000));
        assert_eq!(at(1_000_000), (1, 0), "on the tick: not rounded");
        assert_eq!(at(1_000_001), (2, 999_999));
        assert_eq!(at(u64::MAX).0, clock.end_tick(), "held at the end");
        assert_eq!(clock.end_tick(), (u64::MAX - 1_000_000) / 1_000_000);
        for ns in [0, 1, 499_999, 1_000_000, 1_000_001, 123_456_789_012] {
            assert_eq!(clock.exact_ns(clock.deadline_of(ns)), ns);
        }
        assert!(clock.deadline_of(2_100_000) < clock.deadline_of(2_200_000));
        assert!(clock.deadline_of(2_900_000) < clock.deadline_of(3_000_001));
        assert!(clock.deadline_of(2_900_000) < clock.deadline_of(3_000_000));
    }
}
