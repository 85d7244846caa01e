//! The tick thread: it sleeps until the wheel's next expiry (not every tick), moves what is
//! due into the run queue at its exact deadline, and watches the queue for the executor's
//! monitor.
//!
//! Exact dispatch. The wheel keeps ticks; each timer also keeps its exact deadline (see
//! [`Deadline`](super::clock::Deadline)). For the wheel's next expiry `e` the thread wakes at
//! the start of tick `e - 1`, one tick early, and expires up to `e`: it queues at once what
//! is due by its exact time and keeps the rest in [`HeldTimers`], its own list sorted by exact
//! time, then sleeps until the earliest held time and queues each held timer when its time
//! has come. A timer so runs at its exact deadline, never before, normally within
//! [`min_gap`] after, instead of up to a tick after rounded up to the tick's end.
//!
//! Why this shape. Expiring a tick early costs nothing when idle: the thread still sleeps
//! until the wheel has work (one wake-up per expiry, as before, a tick sooner). While
//! timers are due the thread wakes for held ones, but no sooner than [`min_gap`] (an eighth
//! of the tick, from 50 us to 1 ms) after it last released some: a wake-up queues every
//! held timer due by then, so a dense load costs at most 8 such wake-ups per tick and
//! lateness about half the gap, while a sparse one wakes once per timer, on time. A held
//! timer is detached from the wheel exactly like an expired one waiting in the run queue,
//! so cancel (it never runs), reset (moved back into the wheel), export and shutdown
//! (dropped with the shard, once) treat it as they treat a queued one; the held id is then
//! stale and starting it does nothing. A run never starts before its exact deadline: a
//! stale entry in the run queue whose timer was reset and then expired early again is
//! refused when a worker would start it (`ShardState::start`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use super::clock::{Clock, Deadline};
use super::runtime_state::RuntimeState;
use super::wake::tighten_timer_slack;
use super::worker::{run_queued, spawn_worker};
use super::{Task, TimerId};

/// How often the thread looks at the clocks while wall-clock timers are pending, to catch
/// a step of the system clock.
const WALL_CHECK: Duration = Duration::from_secs(1);

/// The shortest time between two wake-ups for held timers: an eighth of the tick, at
/// least 50 us (and at most the tick), at most 1 ms (so that a large tick does not fold
/// the points of a periodic timer whose period is shorter than an eighth of it).
fn min_gap(tick_ns: u64) -> u64 {
    (tick_ns / 8).clamp(50_000, 1_000_000).min(tick_ns)
}

/// The first tick whose timers a thread waking at `wake_ns` expires in time: it expires up
/// to the tick after the one it wakes in, and a timer of tick `t` is due after the start
/// of tick `t - 1`.
fn wake_tick(wake_ns: u64, tick_ns: u64) -> u64 {
    wake_ns.div_ceil(tick_ns).saturating_add(1)
}

/// Timers the tick thread expired ahead of their exact deadline, earliest first; only the
/// tick thread touches it.
///
/// A list kept in order rather than a heap: the wheel hands its timers over sorted by
/// deadline, and each round's are later than the last round's, so a hold is nearly always
/// a push at the back and a release a pop at the front (a heap's sift per timer was a third
/// of the tick thread's time at 800k expiries a second). A timer due before some held ones
/// (added already due) goes in its place, near the front.
#[derive(Default)]
pub(crate) struct HeldTimers {
    /// By exact time, then in the order held (timers of one exact time go in the order they
    /// were expired in: their deadline order, then the order they were added in).
    timers: VecDeque<(u64, Deadline, TimerId)>,
    /// When timers were last released (0: never).
    released_ns: u64,
}

impl HeldTimers {
    /// Keeps `id`, due at `deadline`, until `exact_ns`.
    pub(crate) fn hold(&mut self, exact_ns: u64, deadline: Deadline, id: TimerId) {
        let timer = (exact_ns, deadline, id);
        match self.timers.back() {
            Some(&(last_ns, ..)) if last_ns > exact_ns => {
                let at = self.timers.partition_point(|&(ns, ..)| ns <= exact_ns);
                self.timers.insert(at, timer);
            }
            _ => self.timers.push_back(timer),
        }
    }

    /// Moves every id due by `now_ns` to `due` with its deadline, earliest first.
    pub(crate) fn take_due(&mut self, now_ns: u64, due: &mut Vec<(Deadline, TimerId)>) {
        let count = self.timers.partition_point(|&(ns, ..)| ns <= now_ns);
        if count > 0 {
            due.extend(
                self.timers
                    .drain(..count)
                    .map(|(_, deadline, id)| (deadline, id)),
            );
            self.released_ns = now_ns;
        }
    }

    /// When the thread should wake for the earliest held timer: at its exact deadline, but
    /// no sooner than `gap` after timers were last released.
    fn wake_ns(&self, gap: u64) -> Option<u64> {
        let &(earliest, ..) = self.timers.front()?;
        Some(earliest.max(self.released_ns.saturating_add(gap)))
    }
}

/// The tick thread: a [`round`], then sleep until the next wake-up it needs
/// (or until woken, or the longest sleep the round allows).
pub(crate) fn ticker_main<T: Task>(inner: Arc<RuntimeState<T>>) {
    tighten_timer_slack();
    let mut held = HeldTimers::default();
    while !inner.ticker.stopped() {
        inner.ticker.begin_scan();
        let (next, longest) = round(&inner, &mut held);
        let wake_ns = wake_time(&inner.clock, next, &held);
        let timeout = match wake_ns {
            Some(ns) => Some(inner.clock.until_ns(ns).min(longest)),
            None => (longest != Duration::MAX).then_some(longest),
        };
        let tick_ns = inner.clock.tick_ns();
        inner
            .ticker
            .sleep(wake_ns.map(|ns| wake_tick(ns, tick_ns)), timeout);
    }
    inner.executor.ticker_exited();
}

/// One step of time for manual `poll` and the virtual clock: queues every run due by the
/// current tick (its exact deadline is then past too). Returns as [`step_time`].
pub(crate) fn advance_time<T: Task>(inner: &RuntimeState<T>) -> (Option<u64>, bool) {
    step_time(inner, inner.clock.now_tick(), |mut expired| {
        inner.executor.push(&mut expired);
    })
}

/// The tick thread's step of time: expires one tick ahead, queues what is due by its exact
/// deadline and holds the rest until then (see the module doc), then queues the held timers
/// whose time has come. Returns as [`step_time`].
fn advance_ahead<T: Task>(inner: &RuntimeState<T>, held: &mut HeldTimers) -> (Option<u64>, bool) {
    let ahead = inner.clock.now_tick().saturating_add(1);
    step_time(inner, ahead, |expired| {
        for (deadline, id) in expired {
            held.hold(inner.clock.exact_ns(deadline), deadline, id);
        }
        let mut due = Vec::new();
        held.take_due(inner.clock.elapsed_ns(), &mut due);
        inner.executor.push(&mut due);
    })
}

/// Follows a step of the system clock, expires what is due by `tick` and hands it to
/// `dispatch` in deadline order, then moves far timers closer. Returns the next tick with
/// work and whether wall-clock timers are pending.
fn step_time<T: Task>(
    inner: &RuntimeState<T>,
    tick: u64,
    dispatch: impl FnOnce(Vec<(Deadline, TimerId)>),
) -> (Option<u64>, bool) {
    inner.follow_wall_clock();
    dispatch(inner.collect_due(tick));
    inner.move_ahead()
}

/// One round of the tick thread: its step of time (timers held until their exact deadline
/// stay in `held`), then run what is due here (no workers) or let the executor's monitor
/// grow the pool. Returns the next tick with work in the wheel and the longest sleep
/// allowed.
fn round<T: Task>(inner: &Arc<RuntimeState<T>>, held: &mut HeldTimers) -> (Option<u64>, Duration) {
    let (next, wall) = advance_ahead(inner, held);
    let mut longest = if wall { WALL_CHECK } else { Duration::MAX };
    if inner.config.max_workers == 0 {
        run_queued(inner, usize::MAX);
    } else {
        let growth = inner.executor.grow(inner.clock.elapsed_ns());
        (0..growth.start).for_each(|_| spawn_worker(inner));
        longest = longest.min(growth.look_again.unwrap_or(Duration::MAX));
    }
    (next, longest)
}

/// When the thread must wake next (`None`: only when woken): at the start of the tick
/// before the wheel's `next` expiry, or for the earliest held timer (see
/// [`HeldTimers::wake_ns`]).
fn wake_time(clock: &Clock, next: Option<u64>, held: &HeldTimers) -> Option<u64> {
    let for_wheel = next.map(|tick| clock.tick_start_ns(tick.saturating_sub(1)));
    let for_held = held.wake_ns(min_gap(clock.tick_ns()));
    for_wheel.into_iter().chain(for_held).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_ids(held: &mut HeldTimers, now_ns: u64) -> Vec<u64> {
        let mut due = Vec::new();
        held.take_due(now_ns, &mut due);
        due.iter().map(|(_, id)| id.as_u64()).collect()
    }

    #[test]
    fn held_timers_leave_by_exact_time_ties_in_the_order_held() {
        let mut held = HeldTimers::default();
        let mut hold = |ns, n| held.hold(ns, Deadline::at_tick(1), TimerId::from_u64(n).unwrap());
        hold(500, 1);
        hold(700, 2);
        hold(500, 3); // behind 1: same time, held later
        hold(100, 4); // added already due: before every other
        hold(900, 5);
        assert_eq!(held_ids(&mut held, 99), Vec::<u64>::new());
        assert_eq!(held.wake_ns(0), Some(100));
        assert_eq!(held_ids(&mut held, 500), [4, 1, 3]);
        assert_eq!(
            held.wake_ns(1000),
            Some(1500),
            "no sooner than the gap after a release"
        );
        assert_eq!(held_ids(&mut held, u64::MAX), [2, 5]);
        assert_eq!(held.wake_ns(0), None);
    }
}
