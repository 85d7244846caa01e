//! Time under the caller's control ([`Config::virtual_start`](super::Config)): the clock
//! stands still until [`Runtime::advance`] or [`Runtime::advance_to_next`] moves it, and
//! they run what falls due on the calling thread, as `poll` does.
//!
//! The clock moves from one tick with work to the next up to the target, never in one
//! jump: at each stop it reads that tick's start, the callbacks due there run in deadline
//! order, and whatever they schedule (a periodic timer's next run, a timer they add or
//! reset) is in the wheel before the clock moves on. So a fixed-rate timer sees each of its
//! points, a fixed-delay timer counts from the instant its callback returned (the instant it
//! ran: virtual time does not pass during a callback), and the same program runs its
//! callbacks in the same order every time.
//!
//! One advance at a time: a thread that advances while another does waits for it, as for
//! a lock, so the clock ends at the sum of both and callbacks never overlap. The clock's
//! range ends 2^64 ns after its start (see `clock.rs`): deadlines beyond it are held at its
//! last tick, where an advance reaches and runs them; an advance past the range is
//! `Invalid` and changes nothing.

use std::time::{Duration, SystemTime};

use super::runtime_state::RuntimeState;
use super::ticker::advance_time;
use super::worker::run_queued;
use super::{Error, Runtime, Task};

impl<T: Task> Runtime<T> {
    /// Virtual clock: moves time forward by `by`, running on the calling thread every
    /// callback that falls due on the way, in deadline order, with the clock at each one's
    /// tick; returns how many ran. `Invalid` on the real clock, and for an advance past the
    /// clock's range (2^64 ns from its start, about 584 years), which changes nothing;
    /// `Busy` from inside a callback of this runtime (the run under way would no longer be
    /// in order; `Shutdown` there too once the runtime was shut down). Another thread's
    /// advance under way finishes first.
    pub fn advance(&self, by: Duration) -> Result<usize, Error> {
        self.drive_virtual(|inner| {
            let target = u128::from(inner.clock.elapsed_ns()) + by.as_nanos();
            let target_ns = u64::try_from(target).map_err(|_| Error::Invalid)?;
            Ok(run_until(inner, target_ns))
        })
    }

    /// Virtual clock: moves time to the next tick at which a callback is due and runs what
    /// is due there (including what those callbacks add due by then); returns how many ran,
    /// 0 (the clock unmoved) when no timer is pending. Errors as [`advance`](Self::advance).
    pub fn advance_to_next(&self) -> Result<usize, Error> {
        self.drive_virtual(|inner| loop {
            let Some(tick) = next_stop(inner) else {
                return Ok(0);
            };
            let tick_ns = inner.clock.tick_start_ns(tick);
            let ran = run_until(inner, tick_ns.max(inner.clock.elapsed_ns()));
            if ran > 0 {
                return Ok(ran);
            }
            // Only far timers moved closer there: on to the next stop.
        })
    }

    /// The runtime's wall clock, the one [`add_at`](Self::add_at) follows: the virtual
    /// clock's time, or the system clock.
    pub fn now(&self) -> SystemTime {
        self.inner.clock.wall_now()
    }

    /// Runs `step` as a poll, after the advances of other threads under way.
    fn drive_virtual(
        &self,
        step: impl FnOnce(&RuntimeState<T>) -> Result<usize, Error>,
    ) -> Result<usize, Error> {
        if !self.inner.clock.is_virtual() {
            return Err(Error::Invalid);
        }
        // Before `Busy`: a runtime shut down (from this very callback, without waiting)
        // answers `Shutdown`, as every call does there.
        self.inner.check_open()?;
        if self.inner.in_callback() {
            return Err(Error::Busy);
        }
        let _turn = self.inner.clock.take_turn();
        let mut result = Ok(0);
        self.drive(|inner| {
            result = step(inner);
            *result.as_ref().unwrap_or(&0)
        })?;
        result
    }
}

/// The next tick with work that the clock can reach: none past its end tick, where only
/// periodic timers whose schedule left the clock's range wait.
fn next_stop<T: Task>(inner: &RuntimeState<T>) -> Option<u64> {
    inner
        .next_expiry()
        .filter(|&tick| tick <= inner.clock.end_tick())
}

/// Moves the virtual clock to `target_ns`, stopping at every tick with work on the way to
/// run what is due there; returns how many callbacks ran.
fn run_until<T: Task>(inner: &RuntimeState<T>, target_ns: u64) -> usize {
    let mut ran = 0;
    loop {
        let stop_ns = next_stop(inner)
            .map(|tick| inner.clock.tick_start_ns(tick))
            .filter(|&ns| ns <= target_ns);
        inner.clock.move_to(stop_ns.unwrap_or(target_ns));
        advance_time(inner);
        ran += run_queued(inner, usize::MAX);
        if stop_ns.is_none() {
            return ran;
        }
    }
}
