//! A timer's life cycle: its named states, the one place a state is read from a shard's
//! records ([`State::of`]), and the table of the transitions with what each one counts.
//!
//! # States
//!
//! | state         | the task is       | the node                      | will it run?          |
//! |---------------|-------------------|-------------------------------|-----------------------|
//! | `Pending`     | in the entry      | linked in a wheel list        | yes, unless cancelled |
//! | `Due`         | in the entry      | detached: queued for a worker, or held by the tick thread until its exact time | yes, unless cancelled |
//! | `Running`     | out with a worker | detached                      | a periodic one again (`rearms`); a one-shot is over |
//! | `Cancelling`  | out with a worker | detached                      | no: a periodic timer cancelled during its run ends when the run returns |
//!
//! A timer with no node is gone (never existed, ended, or its id is stale): every call on
//! it finds nothing (`NotFound`).
//!
//! # Transitions (every one under the shard's lock but one)
//!
//! | from                         | event                            | to                       | counted (stats, `max_timers` place)        |
//! |------------------------------|----------------------------------|--------------------------|--------------------------------------------|
//! | -                            | add                              | `Pending` (`Due` if due) | `added`; a place taken                     |
//! | `Pending`                    | its tick expired                 | `Due`                    |                                            |
//! | `Due`                        | a worker starts it at its exact time | `Running`            | `fired` (+ `fired_one_shot`, place freed, for a one-shot) |
//! | `Running { rearms: true }`   | the run returns                  | `Pending`                |                                            |
//! | `Running { rearms: false }`  | the run returns, task dropped    | gone                     |                                            |
//! | `Pending`, `Due`             | cancel                           | gone, task dropped by the canceller; a task whose drop runs code: gone, its drop recorded as under way (`drops.rs`) until it returned, or, with the shard's records all in use, `Running { rearms: false }` until then | `cancelled`; place freed |
//! | `Pending` (a plain one-shot) | cancel without the lock (`shard_lock.rs`) | marked cancelled, gone at the lock's next holder | `cancelled` then; place freed at once |
//! | `Running { rearms: true }`   | cancel                           | `Cancelling`             | `cancelled`; place freed                   |
//! | `Cancelling`                 | the run returns, task dropped    | gone                     |                                            |
//! | `Pending`, `Due`             | reset                            | `Pending`                |                                            |
//! | `Running { rearms: true }`   | reset                            | `Running` (next run at the reset's deadline) |                        |
//! | `Pending`, `Due`, `Running { rearms: true }` | shutdown         | gone (a running one when its run returns) | `discarded`; place freed  |
//!
//! A run ends a timer in two steps: the worker drops the task outside the lock, then the
//! node goes ([`ShardState::remove_ended`](super::shard::ShardState::remove_ended)); until then the
//! timer still reads as running, so `cancel_sync` waits for the drop too. A cancel whose
//! task's drop runs code records that drop in the shard while it runs on the canceller's
//! thread, or, failing that, ends the timer in the same two steps: either way a
//! `cancel_sync` on another thread waits for the canceller's drop.

use super::periodic::Periodic;

/// Where a timer is in its life (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Waiting in the wheel for its deadline.
    Pending,
    /// Out of the wheel, waiting for a worker (or for its exact time on the tick thread).
    Due,
    /// Its callback runs, or its run is over and its task being dropped; `rearms`: a
    /// periodic timer that goes back into the wheel when the run returns.
    Running { rearms: bool },
    /// A periodic timer cancelled during its run: it ends when the run returns.
    Cancelling,
}

impl State {
    /// The state of a timer whose node exists: whether its entry holds its task, whether
    /// the node is linked in the wheel, and its periodic schedule if it has one.
    #[inline]
    pub(crate) fn of(task_here: bool, in_wheel: bool, periodic: Option<&Periodic>) -> State {
        match (task_here, in_wheel, periodic) {
            (true, true, _) => State::Pending,
            (true, false, _) => State::Due,
            (false, _, Some(periodic)) if periodic.cancelled => State::Cancelling,
            (false, _, periodic) => State::Running {
                rearms: periodic.is_some(),
            },
        }
    }

    /// Whether the timer will run (again) unless cancelled: cancel and reset act on it.
    pub(crate) fn is_live(self) -> bool {
        matches!(
            self,
            State::Pending | State::Due | State::Running { rearms: true }
        )
    }

    /// Whether its task is out with a worker (running, or being dropped after its run).
    pub(crate) fn is_running(self) -> bool {
        matches!(self, State::Running { .. } | State::Cancelling)
    }

    /// Whether its task is in the entry (pending or due): cancel takes the node out.
    pub(crate) fn holds_task(self) -> bool {
        matches!(self, State::Pending | State::Due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::PeriodMode;

    #[test]
    fn every_combination_of_the_records_names_one_state() {
        let live = Periodic::new(1, PeriodMode::FixedRate);
        let cancelled = Periodic {
            cancelled: true,
            ..Periodic::new(1, PeriodMode::FixedRate)
        };
        let cases = [
            (true, true, None, State::Pending),
            (true, true, Some(&live), State::Pending),
            (true, false, None, State::Due),
            (true, false, Some(&live), State::Due),
            (false, false, None, State::Running { rearms: false }),
            (false, false, Some(&live), State::Running { rearms: true }),
            (false, false, Some(&cancelled), State::Cancelling),
        ];
        for (task_here, in_wheel, periodic, state) in cases {
            assert_eq!(State::of(task_here, in_wheel, periodic), state);
        }
    }

    #[test]
    fn live_running_and_holding_the_task_as_the_table_says() {
        use State::*;
        let all = [
            Pending,
            Due,
            Running { rearms: true },
            Running { rearms: false },
            Cancelling,
        ];
        let live: Vec<_> = all.iter().map(|s| s.is_live()).collect();
        assert_eq!(live, [true, true, true, false, false]);
        let running: Vec<_> = all.iter().map(|s| s.is_running()).collect();
        assert_eq!(running, [false, false, true, true, true]);
        let holds: Vec<_> = all.iter().map(|s| s.holds_task()).collect();
        assert_eq!(holds, [true, true, false, false, false]);
    }
}
