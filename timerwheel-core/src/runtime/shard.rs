//! A shard: one wheel and its bookkeeping behind one lock. Threads add to the shard of their
//! own (round-robin by thread), so two threads adding at once rarely meet on a lock.
//!
//! A timer's life in a shard: pending in the wheel; expired (detached, queued for a worker);
//! running (its task is out with the worker; the node stays so that its id stays known);
//! then gone (one-shot done, cancelled) or pending again (periodic). Every method here runs
//! under the shard's lock and hands tasks that must be dropped back to the caller, who drops
//! them after unlocking.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::SystemTime;

use super::clock::{Clock, Deadline};
use super::stats::Counters;
use super::{Error, PeriodMode, Task, TimerId};
use crate::wheel::{Full, Key, Wheel};

/// Low bits of a timer id that name its shard.
const SHARD_BITS: u32 = 4;
/// Most shards a runtime has.
pub(crate) const MAX_SHARDS: usize = 1 << SHARD_BITS;
/// Most timers one shard holds (the node index shares 32 bits with the shard number).
pub(crate) const MAX_PER_SHARD: usize = 1 << (32 - SHARD_BITS);

/// A timer id: the wheel key's generation in the high half, then its index, then the shard.
pub(crate) fn encode(shard: usize, key: Key) -> TimerId {
    let raw = key.to_u64();
    let index = raw & u64::from(u32::MAX);
    let id = (raw & !u64::from(u32::MAX)) | (index << SHARD_BITS) | shard as u64;
    TimerId::from_u64(id).expect("a key's generation is never 0")
}

/// The shard and key an id names (the shard may not exist: callers check).
pub(crate) fn decode(id: TimerId) -> (usize, Option<Key>) {
    let raw = id.as_u64();
    let shard = (raw as usize) & (MAX_SHARDS - 1);
    let index = (raw & u64::from(u32::MAX)) >> SHARD_BITS;
    (shard, Key::from_u64((raw & !u64::from(u32::MAX)) | index))
}

/// When a timer runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Schedule {
    Once,
    Every { period: u64, mode: PeriodMode },
    At(SystemTime),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    OneShot,
    Periodic,
    Wall,
}

/// What the wheel holds per timer. `task` is `None` while a worker runs it.
pub(crate) struct Entry<T> {
    task: Option<T>,
    kind: Kind,
    cancelled: bool,
    /// The deadline's phase within its tick (see [`Deadline`]).
    phase: u8,
}

struct Periodic {
    period: u64,
    mode: PeriodMode,
    /// A reset made while the callback ran: the next deadline.
    reset_to: Option<Deadline>,
}

/// A run handed to a worker.
pub(crate) struct Run<T> {
    pub(crate) task: T,
    pub(crate) deadline: u64,
    /// Whether the timer goes back into the wheel when the run returns (unless cancelled);
    /// any other timer ends with its run.
    pub(crate) periodic: bool,
}

/// How a periodic timer's run ended.
pub(crate) enum Finished<T> {
    /// It went back into the wheel, due at this deadline.
    Rearmed(Deadline),
    /// It ended (cancelled): drop the task, then [`forget`](ShardState::forget) the key.
    Ended(T),
}

pub(crate) struct Shard<T> {
    state: Mutex<ShardState<T>>,
    /// Signalled when a run finishes and someone waits in `cancel_sync`.
    finished: Condvar,
}

pub(crate) struct ShardState<T> {
    wheel: Wheel<Entry<T>>,
    periodic: HashMap<Key, Periodic>,
    wall: HashMap<Key, SystemTime>,
    pub(crate) counters: Counters,
    sync_waiters: usize,
    /// Scratch space of `expire_due`.
    expired: Vec<Key>,
    closed: bool,
}

impl<T> Shard<T> {
    pub(crate) fn new(limit: usize, now: u64) -> Self {
        Shard {
            state: Mutex::new(ShardState::new(limit, now)),
            finished: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, ShardState<T>> {
        // A panic never happens under this lock (tasks run and drop outside it), so a
        // poisoned lock still guards consistent state.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Wakes `cancel_sync` callers if any wait on this shard.
    pub(crate) fn notify_finished(&self, state: &ShardState<T>) {
        if state.sync_waiters > 0 {
            self.finished.notify_all();
        }
    }

    /// Waits, with the lock, until no run of `key` is under way and, if the run ended the
    /// timer, its task has been dropped (see [`ShardState::forget`]).
    pub(crate) fn wait_not_running<'a>(
        &self,
        mut state: MutexGuard<'a, ShardState<T>>,
        key: Key,
    ) -> MutexGuard<'a, ShardState<T>> {
        state.sync_waiters += 1;
        while state.is_running(key) {
            state = self
                .finished
                .wait(state)
                .unwrap_or_else(|poison| poison.into_inner());
        }
        state.sync_waiters -= 1;
        state
    }
}

impl<T> ShardState<T> {
    /// An empty, open shard holding at most `limit` timers, its wheel at tick `now`.
    pub(crate) fn new(limit: usize, now: u64) -> Self {
        let mut wheel = Wheel::with_limit(limit.min(MAX_PER_SHARD));
        wheel.advance(now, |_, _| {});
        ShardState {
            wheel,
            periodic: HashMap::new(),
            wall: HashMap::new(),
            counters: Counters::default(),
            sync_waiters: 0,
            expired: Vec::new(),
            closed: false,
        }
    }

    pub(crate) fn insert(
        &mut self,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
    ) -> Result<Key, (Error, T)> {
        if self.closed {
            return Err((Error::Shutdown, task));
        }
        let kind = match schedule {
            Schedule::Once => Kind::OneShot,
            Schedule::Every { .. } => Kind::Periodic,
            Schedule::At(_) => Kind::Wall,
        };
        let entry = Entry {
            task: Some(task),
            kind,
            cancelled: false,
            phase: deadline.phase,
        };
        let key = self
            .wheel
            .insert(deadline.tick, entry)
            .map_err(|Full(entry)| (Error::Full, entry.task.expect("just put in")))?;
        match schedule {
            Schedule::Once => {}
            Schedule::Every { period, mode } => {
                let periodic = Periodic {
                    period,
                    mode,
                    reset_to: None,
                };
                self.periodic.insert(key, periodic);
            }
            Schedule::At(when) => {
                self.wall.insert(key, when);
            }
        }
        self.counters.added += 1;
        Ok(key)
    }

    /// Stops a timer. `Ok(Some(task))`: it was pending or queued, here is its task to drop;
    /// `Ok(None)`: a periodic run is under way and the timer ends when it returns.
    pub(crate) fn cancel(&mut self, key: Key) -> Result<Option<T>, Error> {
        let entry = self.wheel.get_mut(key).ok_or(Error::NotFound)?;
        if entry.task.is_some() {
            self.counters.cancelled += 1;
            return Ok(self.remove(key));
        }
        if entry.kind == Kind::Periodic && !entry.cancelled {
            entry.cancelled = true;
            self.counters.cancelled += 1;
            return Ok(None);
        }
        Err(Error::NotFound)
    }

    /// Moves a live timer's next run to `deadline`.
    pub(crate) fn reset(&mut self, key: Key, deadline: Deadline) -> Result<(), Error> {
        let entry = self.wheel.get(key).ok_or(Error::NotFound)?;
        if entry.task.is_some() {
            if entry.kind == Kind::Wall {
                self.wall.remove(&key); // re-armed by a delay: no longer a wall-clock time
            }
            place(&mut self.wheel, key, deadline);
            return Ok(());
        }
        match self.periodic.get_mut(&key) {
            Some(periodic) if !entry.cancelled => {
                periodic.reset_to = Some(deadline);
                Ok(())
            }
            _ => Err(Error::NotFound),
        }
    }

    /// Whether the timer will run (again) unless cancelled.
    pub(crate) fn is_live(&self, key: Key) -> bool {
        self.wheel.get(key).is_some_and(|entry| {
            !entry.cancelled && (entry.task.is_some() || entry.kind == Kind::Periodic)
        })
    }

    pub(crate) fn is_running(&self, key: Key) -> bool {
        self.wheel
            .get(key)
            .is_some_and(|entry| entry.task.is_none())
    }

    /// Expires what is due by `now`, handing each key to `due` with its deadline. Call
    /// [`move_ahead`](Self::move_ahead) after.
    pub(crate) fn expire_due(&mut self, now: u64, mut due: impl FnMut(Key, Deadline))
    where
        T: Task,
    {
        let mut keys = std::mem::take(&mut self.expired);
        self.wheel.expire_due(now, |key| keys.push(key));
        for key in keys.drain(..) {
            let tick = self.wheel.deadline(key).expect("expired keys are live");
            let entry = self.wheel.get(key).expect("expired keys are live");
            if let Some(task) = &entry.task {
                task.warm();
            }
            due(
                key,
                Deadline {
                    tick,
                    phase: entry.phase,
                },
            );
        }
        self.expired = keys;
    }

    /// The wheel's work ahead of time; returns the next tick at which the wheel has work.
    pub(crate) fn move_ahead(&mut self) -> Option<u64> {
        self.wheel.move_ahead();
        self.wheel.next_expiry()
    }

    pub(crate) fn next_expiry(&self) -> Option<u64> {
        self.wheel.next_expiry()
    }

    pub(crate) fn has_wall_timers(&self) -> bool {
        !self.wall.is_empty()
    }

    /// Takes the task of an expired timer for a run. `None` if the id went stale, was
    /// re-armed, or is running already (the queue may hold an id more than once).
    pub(crate) fn start(&mut self, key: Key) -> Option<Run<T>> {
        if self.wheel.is_pending(key) {
            return None;
        }
        let deadline = self.wheel.deadline(key)?;
        let entry = self.wheel.get_mut(key)?;
        let task = entry.task.take()?;
        self.counters.fired += 1;
        let periodic = entry.kind == Kind::Periodic;
        if !periodic {
            self.counters.fired_one_shot += 1;
        }
        Some(Run {
            task,
            deadline,
            periodic,
        })
    }

    /// Ends a periodic timer's run: it goes back into the wheel (its next deadline comes
    /// back), or, cancelled, it ends and its task comes back to be dropped. An ended
    /// timer's node stays, as if still running, until [`forget`](Self::forget): so
    /// `cancel_sync` waits until the task is dropped.
    pub(crate) fn finish(&mut self, key: Key, task: T, clock: &Clock) -> Finished<T> {
        // The node is gone only when the shard was closed under the run (the runtime was
        // dropped from a callback): the timer ends with it.
        let Some(entry) = self.wheel.get_mut(key) else {
            return Finished::Ended(task);
        };
        if entry.kind != Kind::Periodic || entry.cancelled {
            return Finished::Ended(task);
        }
        entry.task = Some(task);
        let previous = self.wheel.deadline(key).expect("live key");
        let periodic = self
            .periodic
            .get_mut(&key)
            .expect("periodic timers have one");
        let next = periodic
            .reset_to
            .take()
            .unwrap_or_else(|| Deadline::at_tick(next_run(periodic, previous, clock)));
        place(&mut self.wheel, key, next);
        Finished::Rearmed(next)
    }

    /// Removes the node of a timer whose run ended, once its task has been dropped.
    pub(crate) fn forget(&mut self, key: Key) {
        if self.is_running(key) {
            self.remove(key);
        }
    }

    /// Removes the node and its side entries; its task if it still holds one.
    fn remove(&mut self, key: Key) -> Option<T> {
        let entry = self.wheel.remove(key)?;
        match entry.kind {
            Kind::OneShot => {}
            Kind::Periodic => {
                self.periodic.remove(&key);
            }
            Kind::Wall => {
                self.wall.remove(&key);
            }
        }
        entry.task
    }

    /// Re-places pending wall-clock timers after the system clock was stepped.
    pub(crate) fn replace_wall_timers(&mut self, clock: &Clock) {
        for (&key, &when) in &self.wall {
            if self.wheel.is_pending(key) {
                place(&mut self.wheel, key, clock.deadline_at(when));
            }
        }
    }

    /// Closes the shard to adds and takes every task out, for shutdown.
    pub(crate) fn close(&mut self) -> Vec<T> {
        self.closed = true;
        let mut tasks = Vec::new();
        // A periodic timer running now (closed from a callback) ends when its run returns:
        // discarded too, though its task is not here.
        let mut running_periodic = 0;
        self.wheel.drain(|_, entry| {
            let live_periodic = entry.kind == Kind::Periodic && !entry.cancelled;
            running_periodic += u64::from(entry.task.is_none() && live_periodic);
            tasks.extend(entry.task);
        });
        self.periodic.clear();
        self.wall.clear();
        self.counters.discarded += tasks.len() as u64 + running_periodic;
        tasks
    }
}

/// Moves a live timer to `deadline`.
fn place<T>(wheel: &mut Wheel<Entry<T>>, key: Key, deadline: Deadline) {
    if let Some(entry) = wheel.get_mut(key) {
        entry.phase = deadline.phase;
        wheel.reset(key, deadline.tick);
    }
}

/// The next deadline of a periodic timer whose run due at `previous` just returned.
fn next_run(periodic: &Periodic, previous: u64, clock: &Clock) -> u64 {
    match periodic.mode {
        PeriodMode::FixedDelay => clock
            .deadline_after(std::time::Duration::ZERO)
            .tick
            .saturating_add(periodic.period),
        // The first point of the schedule not yet past: missed periods coalesce.
        PeriodMode::FixedRate => {
            let now = clock.now_tick();
            let next = previous.saturating_add(periodic.period);
            if next > now {
                next
            } else {
                let missed = (now - previous) / periodic.period;
                previous.saturating_add((missed + 1).saturating_mul(periodic.period))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_shards() {
        let mut wheel = Wheel::new();
        let key = wheel.insert(5, ()).unwrap();
        for shard in [0, 1, MAX_SHARDS - 1] {
            let id = encode(shard, key);
            assert_eq!(decode(id), (shard, Some(key)));
        }
    }
}
