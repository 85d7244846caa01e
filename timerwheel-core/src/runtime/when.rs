//! When a new timer runs: what [`Runtime::add_publishing`](super::Runtime::add_publishing)
//! takes, one variant for each of the add calls.

use std::time::{Duration, SystemTime};

use super::{Missed, PeriodMode};

/// When a new timer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Once, not before `delay` has passed ([`add`](super::Runtime::add)).
    After(Duration),
    /// Periodically ([`add_periodic`](super::Runtime::add_periodic)).
    Every {
        /// Until the first run.
        delay: Duration,
        /// Between runs (not zero).
        period: Duration,
        /// What the period is measured from.
        mode: PeriodMode,
    },
    /// Once, at a wall-clock time ([`add_at`](super::Runtime::add_at)).
    At(SystemTime),
    /// Periodically, in phase with a wall-clock start
    /// ([`add_periodic_at`](super::Runtime::add_periodic_at)).
    EveryFrom {
        /// The schedule's first point on the wall clock.
        first: SystemTime,
        /// Between runs (not zero).
        period: Duration,
        /// What the period is measured from.
        mode: PeriodMode,
        /// What becomes of the points that passed before the add.
        missed: Missed,
    },
}
