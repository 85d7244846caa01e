//! Where a periodic timer runs next. Times are exact nanoseconds on the runtime's clock;
//! only the deadline that comes out is rounded up to the tick, each on its own, so a period
//! that is not a multiple of the tick does not drift.

use std::time::Duration;

use super::clock::{Clock, Deadline};
use super::{Missed, PeriodMode};

/// What a periodic timer keeps beside its wheel entry (whose deadline holds the exact time
/// of the run now pending or under way, the schedule's current point).
pub(crate) struct Periodic {
    pub(crate) period_ns: u64,
    pub(crate) mode: PeriodMode,
    /// The next deadline, when set: by a reset made while the callback ran, or as the
    /// grid point after a catch-up run (see [`resume`]).
    pub(crate) reset_to: Option<Deadline>,
    /// Cancelled while the callback ran: the timer ends when the run returns.
    pub(crate) cancelled: bool,
}

impl Periodic {
    pub(crate) fn new(period_ns: u64, mode: PeriodMode) -> Self {
        Periodic {
            period_ns,
            mode,
            reset_to: None,
            cancelled: false,
        }
    }

    /// The next deadline after the run due at `point_ns` (exact), which started at
    /// `started_ns`, returned, now. A next point held at the end of the clock's range
    /// (see `clock.rs`) where this run stood is never reached: no second run there.
    pub(crate) fn next(&mut self, point_ns: u64, started_ns: u64, clock: &Clock) -> Deadline {
        if let Some(reset) = self.reset_to.take() {
            return reset;
        }
        let next = match self.mode {
            PeriodMode::FixedDelay => clock.deadline_after(Duration::from_nanos(self.period_ns)),
            PeriodMode::FixedRate => {
                let returned_ns = clock.elapsed_ns();
                let next = fixed_rate_next(point_ns, self.period_ns, started_ns, returned_ns);
                clock.deadline_of(next)
            }
        };
        let held_where_it_ran = next.tick == clock.end_tick() && clock.exact_ns(next) <= started_ns;
        if held_where_it_ran {
            Deadline::NEVER
        } else {
            next
        }
    }
}

/// The point of the fixed-rate schedule `point + k·period` (k ≥ 1) that runs next, after
/// the run due at `point` started at `started` and returned at `returned` (all in ns): the
/// latest point at or before `returned` if there is one (it is due: it runs at once, late,
/// and the points before it, which passed entirely while the run was under way, are
/// coalesced into it); otherwise the first point after `point`. Never a second run at the
/// reading the run started at: on a clock that stood still during the run (virtual), the
/// points at that reading are coalesced into it, and the next is the first one after it.
/// Saturates at `u64::MAX` (584 years).
pub(crate) fn fixed_rate_next(point: u64, period: u64, started: u64, returned: u64) -> u64 {
    let latest_by = |t: u64| t.saturating_sub(point) / period;
    let k = if returned > started {
        latest_by(returned).max(1)
    } else {
        latest_by(started).saturating_add(1)
    };
    point.saturating_add(k.saturating_mul(period))
}

/// How a schedule `first + k·period`, added `late` ns after `first` (> 0), resumes, as
/// delays from now in ns: its first run, and, when that run is a catch-up run for points
/// that passed (`RunOnce`: now), the delay of the grid point that follows it. A point due
/// right now runs now either way; `Skip` waits for the next point. Exact in `u128`: a start
/// 292 million years back (`INT64_MIN` ms) with a period of as long keeps its phase.
pub(crate) fn resume(late: u128, period: u128, missed: Missed) -> (u128, Option<u128>) {
    let to_next_point = (period - late % period) % period;
    match missed {
        _ if to_next_point == 0 => (0, None),
        Missed::RunOnce => (0, Some(to_next_point)),
        Missed::Skip => (to_next_point, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_returns_in_time_waits_for_the_next_point() {
        assert_eq!(fixed_rate_next(10, 10, 10, 13), 20);
        assert_eq!(
            fixed_rate_next(10, 10, 10, 5),
            20,
            "returned before its point: clock skew"
        );
    }

    #[test]
    fn a_point_that_passed_during_the_run_runs_at_once() {
        assert_eq!(fixed_rate_next(10, 10, 10, 20), 20);
        // A run due at 10 ms that took 10.3 ms: the one due at 20 ms starts at once.
        assert_eq!(fixed_rate_next(10_000, 10_000, 10_000, 20_300), 20_000);
        // A run due at 30 that took 35: 40 and 50 passed entirely, 60 is due.
        assert_eq!(fixed_rate_next(30, 10, 30, 65), 60);
    }

    #[test]
    fn no_second_run_at_the_reading_a_run_started_at() {
        // A period below the tick on a clock that stands still during the run (virtual):
        // the points at the reading are this run's, the next one is after the reading.
        assert_eq!(fixed_rate_next(100, 30, 1000, 1000), 1030);
        // On a clock that moved, the latest point due runs at once.
        assert_eq!(fixed_rate_next(10, 10, 35, 36), 30);
    }

    #[test]
    fn a_resumed_schedule_runs_once_now_or_skips_to_its_next_point() {
        // Points every 10; added 25 after the first: 20 passed, 30 is next.
        assert_eq!(resume(25, 10, Missed::RunOnce), (0, Some(5)));
        // 292 million years late with a period of 584 million years: the phase holds.
        let (late, period) = (
            u128::from(u64::MAX) * 500_000,
            u128::from(u64::MAX) * 1_000_000,
        );
        assert_eq!(resume(late, period, Missed::Skip), (period - late, None));
        assert_eq!(resume(25, 10, Missed::Skip), (5, None));
        // Added right on a point: it runs now, and the grid goes on from it.
        assert_eq!(resume(30, 10, Missed::RunOnce), (0, None));
        assert_eq!(resume(30, 10, Missed::Skip), (0, None));
    }

    #[test]
    fn the_schedule_saturates_instead_of_wrapping() {
        assert_eq!(
            fixed_rate_next(u64::MAX - 5, 10, u64::MAX - 5, u64::MAX),
            u64::MAX
        );
    }
}

#[cfg(all(test, not(loom)))]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The rule, for any tick, period, point, start and return time (far from
        /// saturation): the next point is on the grid and after `point`; either it lies
        /// after the return time and is the first point after `point` (nothing was missed),
        /// or it lies at or before the return time and the point after it does not (it is
        /// the latest point due, and runs at once). A run that took no time on its clock is
        /// followed by the first point after its reading. Its deadline is never before it, and less than a tick
        /// after it.
        #[test]
        fn the_next_point_is_the_latest_due_or_the_first_ahead(
            tick_ns in 100_000u64..=1_000_000_000,
            period in 1u64..1 << 40,
            point in 0u64..1 << 60,
            started_late in 0u64..1 << 44,
            ran_for in 0u64..1 << 44,
        ) {
            let started = point + started_late;
            let returned = started + ran_for;
            let next = fixed_rate_next(point, period, started, returned);
            prop_assert!(next > point && (next - point) % period == 0);
            if ran_for == 0 {
                prop_assert!(next > started && next - period <= started, "first after");
            } else if next > returned {
                prop_assert_eq!(next, point + period);
            } else {
                prop_assert!(next + period > returned);
            }
            let clock = Clock::new(Duration::from_nanos(tick_ns));
            let deadline = clock.deadline_of(next);
            prop_assert_eq!(clock.exact_ns(deadline), next);
            let tick_start = deadline.tick * tick_ns;
            prop_assert!(tick_start >= next && tick_start - next < tick_ns);
        }
    }
}
