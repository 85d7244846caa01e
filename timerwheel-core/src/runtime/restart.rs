//! Timers that survive a restart: an export of the pending timers taken at one instant,
//! for the application to keep in its own store, and the re-creation of a periodic timer
//! in phase with the schedule it had before the restart.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::clock::{Clock, Deadline};
use super::extras::Schedule;
use super::periodic::resume;
use super::{period_ns, Error, GroupId, PeriodMode, Rejected, Runtime, Task, TimerId, When};

/// What a periodic timer re-created at an absolute start
/// ([`Runtime::add_periodic_at`]) does with the points of its schedule that passed before
/// it was added (while the process was down).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// One run now, for all of them together; then the schedule goes on at its next point.
    RunOnce,
    /// None: the first run is the schedule's next point.
    Skip,
}

/// How an exported timer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// Runs once, after a delay.
    OneShot,
    /// Runs every `period`, in `mode`.
    Periodic {
        /// The time between runs.
        period: Duration,
        /// How the next run is scheduled.
        mode: PeriodMode,
    },
    /// Runs once at the wall-clock time `when` (as added with `add_at`).
    WallClock {
        /// The time it was added for.
        when: SystemTime,
    },
}

/// One timer of an export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportedTimer {
    /// Its id in the exporting runtime (a new runtime gives the re-created timer a new one).
    pub id: TimerId,
    /// Its next run on the runtime's monotonic clock: the time since the runtime started
    /// (its exact deadline, before rounding up to the tick; it may lie before
    /// [`Export::at_monotonic`] for a timer that is due and waits for a worker).
    pub due_monotonic: Duration,
    /// The same instant on the runtime's wall clock ([`Runtime::now`]: virtual or real),
    /// as that clock read at the export.
    pub due: SystemTime,
    /// How it runs.
    pub kind: TimerKind,
}

/// What an export covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Export {
    /// The instant of the export on the runtime's monotonic clock (since it started).
    pub at_monotonic: Duration,
    /// The same instant on the runtime's wall clock.
    pub at: SystemTime,
    /// How many timers were exported.
    pub timers: usize,
    /// Periodic timers left out because their callback was running at the export: their
    /// task is out with the callback. Each is pending again when the callback returns; an
    /// export taken then includes it.
    pub running: usize,
}

impl<T: Task> Runtime<T> {
    /// Adds a periodic timer on the schedule `first, first + period, first + 2 period, ...`
    /// given by its absolute start `first` on the runtime's wall clock ([`now`](Self::now)),
    /// so that a timer re-created after a restart stays in phase with the one exported
    /// before it. When `first` is still ahead, the first run is at `first`. When it has
    /// passed, `missed` says what becomes of the points that passed: one run now, then the
    /// next point ([`Missed::RunOnce`]), or none ([`Missed::Skip`]); a point due right now
    /// runs now either way. From the first run on, the timer is an ordinary periodic timer
    /// in `mode` (a fixed-rate one stays on the grid), timed on the monotonic clock like
    /// every delay: the wall clock is read once, here. `Invalid` for a zero period.
    pub fn add_periodic_at(
        &self,
        first: SystemTime,
        period: Duration,
        mode: PeriodMode,
        missed: Missed,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        let when = When::EveryFrom {
            first,
            period,
            mode,
            missed,
        };
        self.add_publishing(when, None, task, |_| {})
    }

    /// [`add_periodic_at`](Self::add_periodic_at), into the open group `group` (see
    /// [`group_add`](Self::group_add)).
    pub fn group_add_periodic_at(
        &self,
        group: GroupId,
        first: SystemTime,
        period: Duration,
        mode: PeriodMode,
        missed: Missed,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        let when = When::EveryFrom {
            first,
            period,
            mode,
            missed,
        };
        self.add_publishing(when, Some(group), task, |_| {})
    }

    /// The first deadline and the schedule of the timer of
    /// [`add_periodic_at`](Self::add_periodic_at); `None` for a zero period.
    pub(super) fn resumed_schedule(
        &self,
        first: SystemTime,
        period: Duration,
        mode: PeriodMode,
        missed: Missed,
    ) -> Option<(Deadline, Schedule)> {
        let period_ns = period_ns(period)?;
        let clock = &self.inner.clock;
        let (now, wall) = (clock.elapsed_ns(), clock.wall_now());
        let at = |delay: u128| clock.deadline_of_wide(u128::from(now) + delay);
        // Exact to the nanosecond, however far back the start and however long the period.
        let (delay, then) = match first.duration_since(wall) {
            Ok(ahead) => (ahead.as_nanos(), None),
            Err(passed) => resume(passed.duration().as_nanos(), period.as_nanos(), missed),
        };
        let period = period_ns;
        let schedule = match then {
            None => Schedule::Every { period, mode },
            Some(then) => Schedule::EveryAfterCatchUp {
                period,
                mode,
                then: at(then),
            },
        };
        Some((at(delay), schedule))
    }

    /// Hands every pending timer to `visit`, as of one instant, in deadline order, with
    /// what `copy` took of its task. Every shard is locked (in shard order) while the clocks
    /// are read and `copy` runs for each timer, so a timer added or cancelled concurrently
    /// is either wholly before the export or wholly after it; then the locks are released
    /// and `visit` runs, while the runtime goes on. Left out: one-shots whose callback has
    /// started (they are no longer pending), and periodic timers whose callback is running
    /// (counted in [`Export::running`]). A timer that is due and waits for a worker is
    /// included.
    ///
    /// `copy` runs under the runtime's locks: take only what `visit` needs (a clone of an
    /// `Arc`, a key), cheaply, and read nothing of this runtime there (`stats` would wait
    /// for the locks it holds). Until `visit` has seen the last timer, no task of this
    /// runtime is dropped: a timer that ends meanwhile (cancelled, run, discarded) has its
    /// task dropped on this thread after `visit` returned for the last time, before
    /// `export` returns, so what a copy points into stays valid while `visit` runs;
    /// `cancel_sync` of such a timer waits for that drop. Called back from `copy` or
    /// `visit`, every method of this runtime that changes it or waits returns `Busy` and
    /// changes nothing (`Shutdown` once another thread began its shutdown, as from
    /// anywhere); from `visit`, `stats`, `now` and `is_pending` work. `Shutdown` or
    /// `Forked` as `add` gives them; `Busy` from inside another export of this runtime.
    pub fn export<S>(
        &self,
        copy: impl FnMut(&T) -> S,
        mut visit: impl FnMut(&ExportedTimer, S),
    ) -> Result<Export, Error> {
        self.inner.check_open()?;
        // A drop deferred by the export may let the handle this came through be freed (a
        // drop function that destroys its wheel): the runtime stays until the drops ran.
        let inner = Arc::clone(&self.inner);
        let clock = &inner.clock;
        let snapshot = inner.export(|| Instant::read(clock), copy);
        let (at, timers) = (snapshot.at, snapshot.timers.len());
        for (deadline, id, schedule, copied) in snapshot.timers {
            visit(&at.timer(clock, id, deadline, schedule), copied);
        }
        drop(snapshot.exporting); // the drops deferred meanwhile run here
        Ok(Export {
            at_monotonic: Duration::from_nanos(at.ns),
            at: at.wall,
            timers,
            running: snapshot.running,
        })
    }
}

/// An instant on both of the runtime's clocks (that of an export).
#[derive(Clone, Copy)]
pub(super) struct Instant {
    ns: u64,
    wall: SystemTime,
}

impl Instant {
    pub(super) fn read(clock: &Clock) -> Self {
        Instant {
            ns: clock.elapsed_ns(),
            wall: clock.wall_now(),
        }
    }

    /// The time on the wall clock of `ns` on the monotonic one.
    pub(super) fn wall_at(self, ns: u64) -> SystemTime {
        match ns.checked_sub(self.ns) {
            Some(ahead) => self.wall + Duration::from_nanos(ahead),
            None => self.wall - Duration::from_nanos(self.ns - ns),
        }
    }

    fn timer(
        self,
        clock: &Clock,
        id: TimerId,
        deadline: Deadline,
        schedule: Schedule,
    ) -> ExportedTimer {
        let due_ns = clock.exact_ns(deadline);
        let due = self.wall_at(due_ns);
        let kind = match schedule {
            Schedule::Once => TimerKind::OneShot,
            Schedule::Every { period, mode } | Schedule::EveryAfterCatchUp { period, mode, .. } => {
                TimerKind::Periodic {
                    period: Duration::from_nanos(period),
                    mode,
                }
            }
            Schedule::At(when) => TimerKind::WallClock { when },
        };
        ExportedTimer {
            id,
            due_monotonic: Duration::from_nanos(due_ns),
            due,
            kind,
        }
    }
}
