//! A shard: one wheel and its bookkeeping behind one lock. Threads add to the shard of their
//! own (round-robin by thread), so two threads adding at once rarely meet on a lock.
//!
//! A timer's life in a shard follows the states and transitions of `lifecycle.rs`; its
//! state is read in one place, [`ShardState::state`]. Every method here runs under the
//! shard's lock and hands tasks that must be dropped back to the caller, who drops them
//! after unlocking.

use std::cell::UnsafeCell;
use std::num::NonZeroU32;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

use super::add_order::AddOrder;
use super::clock::{Clock, Deadline};
use super::drops::{DropRecord, DropsUnderWay};
use super::extras::{Extra, ExtraId, Extras, Schedule, Slot};
use super::group::{GroupData, GroupId, Groups};
use super::lifecycle::State;
use super::periodic::Periodic;
use super::shard_lock::{CancelLog, ShardLock};
use super::stats::Counters;
use super::{Error, Task, TimerId};
use crate::wheel::{Full, Key, SharedCancel, Wheel};

/// Low bits of a timer id that name its shard.
const SHARD_BITS: u32 = 4;
/// Most shards a runtime has.
pub(crate) const MAX_SHARDS: usize = 1 << SHARD_BITS;
/// Most timers one shard holds (the node index shares 32 bits with the shard number).
pub(crate) const MAX_PER_SHARD: usize = 1 << (32 - SHARD_BITS);

/// Bits of a runtime's creation number that shift its ids (see [`Ids`]).
const RUNTIME_BITS: u32 = 8;
/// How many generations a key cycles through: 1..=u32::MAX (0 is skipped).
const GENERATIONS: u64 = u32::MAX as u64;
/// How far group ids are moved around the cycle from timer ids (see [`Ids::group`]).
const GROUP_SHIFT: u64 = 1 << (32 - RUNTIME_BITS - 1);

/// Runtimes created in the process so far.
static RUNTIMES_CREATED: AtomicU32 = AtomicU32::new(0);

/// How one runtime writes its ids: the wheel key's generation in the high half, shifted
/// around its cycle by the runtime's creation number, then the key's index, then the shard.
///
/// Each runtime takes the next number from a process-wide counter and moves its
/// generations by (number mod 256) · 2^24 places around their cycle of 2^32 − 1 values.
/// Within a runtime the shift changes nothing: an id whose timer ended reaches a later
/// timer in its slot only after the slot was reused 2^32 − 1 times. Between two runtimes
/// whose numbers differ by less than 256 (mod 256), the shifts differ by at least 2^24 − 1
/// places, so an id of one names a timer of the other only once that slot has been reused
/// at least 2^24 − 1 (16.7 million) times in one of them; before that, it is not found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ids {
    shift: u64,
}

impl Ids {
    /// The ids of a runtime created now.
    pub(crate) fn next() -> Self {
        let number = RUNTIMES_CREATED.fetch_add(1, Relaxed) % (1 << RUNTIME_BITS);
        Ids {
            shift: u64::from(number) << (32 - RUNTIME_BITS),
        }
    }

    /// The id of `key` in `shard`.
    #[inline]
    pub(crate) fn encode(self, shard: usize, key: Key) -> TimerId {
        let raw = key.to_u64();
        let generation = shifted(raw >> 32, self.shift);
        let index = raw & u64::from(u32::MAX);
        let id = (generation << 32) | (index << SHARD_BITS) | shard as u64;
        TimerId::from_u64(id).expect("a key's generation is never 0, shifted or not")
    }

    /// The shard and key an id names (the shard may not exist: callers check).
    #[inline]
    pub(crate) fn decode(self, id: TimerId) -> (usize, Option<Key>) {
        let raw = id.as_u64();
        let shard = (raw as usize) & (MAX_SHARDS - 1);
        let index = (raw & u64::from(u32::MAX)) >> SHARD_BITS;
        let generation = shifted(raw >> 32, GENERATIONS - self.shift);
        (shard, Key::from_u64((generation << 32) | index))
    }

    /// How the runtime writes its group ids: as its timer ids, their generations moved half
    /// the distance between two runtimes further (2^23 places), so that a group id given
    /// as a timer id (or the other way round), of this runtime or another, is not found
    /// unless a slot was reused 2^23 − 1 times.
    fn of_groups(self) -> Self {
        Ids {
            shift: (self.shift + GROUP_SHIFT) % GENERATIONS,
        }
    }

    /// The id of the group `key` in `shard`.
    pub(crate) fn group(self, shard: usize, key: Key) -> GroupId {
        let raw = self.of_groups().encode(shard, key).as_u64();
        GroupId::from_u64(raw).expect("an encoded id is never 0")
    }

    /// The shard and key a group id names (the shard may not exist: callers check).
    pub(crate) fn decode_group(self, id: GroupId) -> (usize, Option<Key>) {
        let as_timer = TimerId::from_u64(id.as_u64()).expect("a group id is never 0");
        self.of_groups().decode(as_timer)
    }
}

/// A generation (1..=u32::MAX) moved `by` (at most one cycle) places around its cycle; 0,
/// which no key has, stays 0. One subtraction instead of a division: ids are encoded and
/// decoded on every call.
#[inline]
fn shifted(generation: u64, by: u64) -> u64 {
    debug_assert!(generation <= GENERATIONS && by <= GENERATIONS);
    match generation {
        0 => 0,
        _ => {
            let moved = generation - 1 + by; // below two cycles
            let wrapped = if moved >= GENERATIONS {
                moved - GENERATIONS
            } else {
                moved
            };
            wrapped + 1
        }
    }
}

/// What the wheel holds per timer. `task` is `None` while a worker runs it.
pub(crate) struct Entry<T> {
    task: Option<T>,
    /// How far the deadline's exact time lies before its tick (see [`Deadline`]).
    rounded_up: RoundedUp,
    /// The record of a periodic or wall-clock timer in the shard's [`Extras`], which says
    /// which of the two it is; none for a one-shot.
    extra: Option<ExtraId>,
}

impl<T: Task> Entry<T> {
    /// Whether a cancel without the lock may take `entry`, opened to it at its add: a
    /// task of a type that releases without the lock says so at each cancel (see
    /// [`Task::RELEASE_WITHOUT_LOCK`]).
    #[inline]
    fn may_cancel_shared(entry: Option<&Self>) -> bool {
        T::CANCEL_WITHOUT_LOCK
            || entry
                .and_then(|entry| entry.task.as_ref())
                .is_some_and(T::drop_is_trivial)
    }

    /// The cancel without the lock that took `entry` lets go of what its task holds.
    #[inline]
    fn release_shared(entry: Option<&Self>) {
        if let Some(task) = entry.and_then(|entry| entry.task.as_ref()) {
            task.release_shared();
        }
    }
}

/// [`Deadline::rounded_up_ns`] as an entry keeps it: plus one, so that `Option<Entry>` has
/// the value 0 to mark an empty wheel node with (no tag of its own, which would make the
/// node 8 bytes larger).
#[derive(Clone, Copy)]
struct RoundedUp(NonZeroU32);

impl RoundedUp {
    fn of(deadline: Deadline) -> Self {
        RoundedUp(NonZeroU32::MIN.saturating_add(deadline.rounded_up_ns))
    }

    fn ns(self) -> u32 {
        self.0.get() - 1
    }
}

/// A run handed to a worker.
pub(crate) struct Run<T> {
    pub(crate) task: T,
    pub(crate) deadline: Deadline,
    /// The clock's reading when the run started.
    pub(crate) started_ns: u64,
    /// Whether the timer goes back into the wheel when the run returns (unless cancelled);
    /// any other timer ends with its run.
    pub(crate) periodic: bool,
    /// The timer's group, if it is in one.
    pub(crate) group: Option<Slot>,
}

/// A timer taken out of its shard by a cancel: the caller drops its task, then, for a
/// timer of a group, tells the group ([`ShardState::dropped`]).
pub(crate) struct Removed<T> {
    pub(crate) task: T,
    pub(crate) group: Option<Slot>,
    /// The task's drop runs code or frees memory: the node stays, read as running, until
    /// that drop has returned and the canceller [`remove_ended`](Shard::remove_ended) it,
    /// so that a `cancel_sync` of the timer meanwhile waits for the drop; unless
    /// [`Locked::record_drop`] removed it at once and recorded the drop instead.
    pub(crate) lingers: bool,
}

/// What a group's delete took out: the tasks of its pending timers (drop them, then tell
/// the group: [`ShardState::dropped`]), how many timers it cancelled in all (the periodic
/// ones running now end when their run returns), and the group's data if it ended.
pub(crate) struct GroupDeleted<T> {
    /// What the timers cancelled left to drop, each with its timer's key.
    pub(crate) tasks: Vec<(Key, Removed<T>)>,
    pub(crate) cancelled: usize,
    pub(crate) group: Slot,
    pub(crate) ended: Option<GroupData>,
}

/// How a periodic timer's run ended.
pub(crate) enum Finished<T> {
    /// It went back into the wheel, due at this deadline.
    Rearmed(Deadline),
    /// It ended (cancelled): drop the task, then [`remove_ended`](ShardState::remove_ended) the key.
    Ended(T),
}

/// Aligned to 128 bytes (two cache lines, which processors fetch in pairs), so that
/// threads busy in shards next to each other in memory write no line they share.
#[repr(align(128))]
pub(crate) struct Shard<T> {
    /// Held by whoever changes the state (see [`Locked`]); shared cancels enter it without
    /// holding it (`shard_lock.rs`).
    lock: ShardLock,
    /// Timers cancelled without the lock, removed by its next holder.
    cancel_log: CancelLog,
    /// The drops that cancels of this shard's timers run now, their nodes gone.
    pub(crate) drops: DropsUnderWay,
    state: UnsafeCell<ShardState<T>>,
    /// Where the wheel's nodes lay at the last add: [`prefetch_node`](Self::prefetch_node)
    /// reads it without the lock. A hint only (std's atomic, also under loom): a stale one
    /// (the pool grew since) costs a useless prefetch.
    nodes_at: AtomicUsize,
}

// SAFETY: the state is changed only through a `Locked` (the lock held, so by one thread at
// a time, and with no shared cancel inside), and read by shared cancels only while no
// `Locked` exists; they read plain fields and write only atomics, and never touch a task,
// so tasks need to be `Send` only, as they would in a `Mutex`.
unsafe impl<T: Send> Sync for Shard<T> {}
// SAFETY: as for a `Mutex<ShardState<T>>`: the tasks move with the shard.
unsafe impl<T: Send> Send for Shard<T> {}

pub(crate) struct ShardState<T> {
    wheel: Wheel<Entry<T>>,
    extras: Extras,
    pub(crate) counters: Counters,
    sync_waiters: usize,
    /// Scratch space of `expire_due`.
    expired: Vec<Key>,
    /// Timers added already due (their deadline's tick reached), in the order they were
    /// added: they leave the wheel at once and go out with the next expiry in that order,
    /// behind what the wheel expires then (a stable sort by deadline keeps it for ties).
    due_on_add: Vec<Key>,
    /// On a manual or virtual wheel, which breaks ties of deadline.
    add_order: AddOrder,
    closed: bool,
    groups: Groups,
}

/// The shard's state held for changes: the lock taken, no shared cancel inside, and the
/// timers they cancelled already removed. Lets the lock go when dropped.
pub(crate) struct Locked<'a, T> {
    shard: &'a Shard<T>,
}

impl<T> Deref for Locked<'_, T> {
    type Target = ShardState<T>;

    #[inline]
    fn deref(&self) -> &ShardState<T> {
        // SAFETY: the lock is held and no shared cancel is inside: no other access exists.
        unsafe { &*self.shard.state.get() }
    }
}

impl<T> DerefMut for Locked<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut ShardState<T> {
        // SAFETY: as for `deref`.
        unsafe { &mut *self.shard.state.get() }
    }
}

impl<T> Drop for Locked<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.shard.lock.unlock();
    }
}

impl<'a, T: Task> Locked<'a, T> {
    /// The lock just taken: removes what was cancelled without it.
    #[inline(always)]
    fn new(shard: &'a Shard<T>) -> Self {
        let mut locked = Locked { shard };
        if !shard.cancel_log.is_empty() {
            locked.take_shared_cancels(&shard.cancel_log);
        }
        locked
    }

    /// After a cancel under this lock took out the task of timer `id` (`key`) and left its
    /// node to linger for the task's drop: records that drop as under way in the shard
    /// (`drops.rs`) and removes the node now, so that the canceller need not take the lock
    /// again to remove it once the drop has returned. `None` (the node lingers) when every
    /// record is in use.
    #[inline]
    pub(crate) fn record_drop(
        &mut self,
        key: Key,
        id: TimerId,
        removed: &mut Removed<T>,
    ) -> Option<DropRecord<'a>> {
        if !removed.lingers {
            return None;
        }
        let record = self.shard.drops.record(id)?;
        // The node the cancel just emptied under this lock (task and record taken out).
        self.remove(key);
        removed.lingers = false;
        Some(record)
    }

    /// Lets the lock go until the shard is notified, then holds it again.
    fn wait(self) -> Self {
        let shard = self.shard;
        std::mem::forget(self); // keeps the lock for `wait` to let go
        shard.lock.wait();
        Locked::new(shard)
    }
}

impl<T: Task> Shard<T> {
    pub(crate) fn new(limit: usize, now: u64) -> Self {
        Shard {
            lock: ShardLock::new(),
            cancel_log: CancelLog::new(),
            drops: DropsUnderWay::new(),
            state: UnsafeCell::new(ShardState::new(limit, now)),
            nodes_at: AtomicUsize::new(0),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> Locked<'_, T> {
        self.lock.lock();
        Locked::new(self)
    }

    /// Cancels a pending timer without the lock (`shard_lock.rs`): `Refused` when the lock
    /// is held, the log full, or the timer not open to it (or its task says no at this
    /// cancel: [`Task::RELEASE_WITHOUT_LOCK`]).
    #[inline]
    pub(crate) fn cancel_shared(&self, key: Key) -> SharedCancel {
        if !self.lock.enter() {
            return SharedCancel::Refused;
        }
        // SAFETY: inside, no `Locked` exists (the lock is not held, and a thread taking it
        // waits for us to leave), so shared access to the state is sound; the cancel reads
        // plain fields and writes atomics only.
        let state = unsafe { &*self.state.get() };
        let cancelled = state.cancel_shared(key, &self.cancel_log);
        self.lock.leave();
        cancelled
    }

    /// Starts loading the node of `key` into the cache, before the lock is taken, so that
    /// its cache miss overlaps the lock and the checks on the way to it.
    #[inline]
    pub(crate) fn prefetch_node(&self, key: Key) {
        Wheel::<Entry<T>>::prefetch_node(self.nodes_at.load(Relaxed), key);
    }

    /// Lets the lock go after inserts: records where the wheel's nodes lie, for
    /// [`prefetch_node`](Self::prefetch_node) (written when it moved: a store on every add
    /// would pull the line from every thread's cache), then, once the lock is let go, faults
    /// in the memory the inserts asked for ahead (see [`Prefault`](crate::wheel::Prefault)).
    #[inline]
    pub(crate) fn unlock_after_insert(&self, mut state: Locked<'_, T>) {
        let nodes_at = state.wheel.nodes_address();
        if self.nodes_at.load(Relaxed) != nodes_at {
            self.nodes_at.store(nodes_at, Relaxed);
        }
        let prefault = state.wheel.take_prefault();
        drop(state);
        if let Some(prefault) = prefault {
            prefault.run();
        }
    }

    /// Removes the node of a timer whose run ended and whose task was dropped
    /// ([`ShardState::remove_ended`]), and wakes the `cancel_sync` callers waiting for it.
    #[inline]
    pub(crate) fn remove_ended(&self, state: &mut ShardState<T>, key: Key) {
        state.remove_ended(key);
        self.notify_finished(state);
    }

    /// Wakes `cancel_sync` callers if any wait on this shard.
    pub(crate) fn notify_finished(&self, state: &ShardState<T>) {
        if state.sync_waiters > 0 {
            self.lock.notify_all();
        }
    }

    /// Waits, with the lock, until no run of `key` is under way and, if the run ended the
    /// timer, its task has been dropped (see [`ShardState::remove_ended`]).
    pub(crate) fn wait_not_running<'a>(&self, mut state: Locked<'a, T>, key: Key) -> Locked<'a, T> {
        state.sync_waiters += 1;
        while state.is_running(key) {
            state = state.wait();
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
            extras: Extras::default(),
            counters: Counters::default(),
            sync_waiters: 0,
            expired: Vec::new(),
            due_on_add: Vec::new(),
            add_order: AddOrder::default(),
            closed: false,
            groups: Groups::default(),
        }
    }

    /// Keeps the order timers are added in, for [`expire_due`](Self::expire_due) to hand
    /// out: on a manual or virtual wheel (`add_order.rs`).
    pub(crate) fn keep_add_order(&mut self) {
        self.add_order = AddOrder::kept();
    }

    /// Adds a timer. A plain one (a one-shot whose task's drop does nothing, of a type that
    /// allows it: [`Task::CANCEL_WITHOUT_LOCK`]; or any one-shot of a type that releases
    /// without the lock: [`Task::RELEASE_WITHOUT_LOCK`]) still pending is opened to cancels
    /// without the lock (`shard_lock.rs`). Always inlined: out of line, the task and the
    /// result move through memory.
    #[inline(always)]
    pub(crate) fn insert(
        &mut self,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
    ) -> Result<Key, (Error, T)>
    where
        T: Task,
    {
        let plain = matches!(schedule, Schedule::Once)
            && (T::CANCEL_WITHOUT_LOCK && task.drop_is_trivial() || T::RELEASE_WITHOUT_LOCK);
        let key = self.insert_closed_to_shared_cancels(deadline, schedule, task)?;
        if plain && !self.due_at_add(deadline) {
            self.wheel.open_to_shared_cancel(key);
        }
        Ok(key)
    }

    #[inline(always)]
    fn insert_closed_to_shared_cancels(
        &mut self,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
    ) -> Result<Key, (Error, T)> {
        if self.closed {
            return Err((Error::Shutdown, task));
        }
        let entry = Entry {
            task: Some(task),
            rounded_up: RoundedUp::of(deadline),
            extra: None,
        };
        let key = self
            .wheel
            .insert(deadline.tick, entry)
            .map_err(|Full(entry)| (Error::Full, entry.task.expect("just put in")))?;
        let extra = match schedule {
            Schedule::Once => None,
            Schedule::Every { period, mode } => Some(Extra::Periodic(Periodic::new(period, mode))),
            Schedule::At(when) => Some(Extra::Wall { key, when }),
            Schedule::EveryAfterCatchUp { period, mode, then } => Some(Extra::Periodic(Periodic {
                reset_to: Some(then),
                ..Periodic::new(period, mode)
            })),
        };
        if let Some(extra) = extra {
            self.attach(key, extra);
        }
        if self.due_at_add(deadline) {
            self.wheel.detach(key);
            self.due_on_add.push(key);
        }
        self.counters.added += 1;
        self.add_order.record(key.index());
        Ok(key)
    }

    /// Whether a timer added now with `deadline` is due at once: its tick has come, so it
    /// leaves the wheel as it is added.
    #[inline]
    fn due_at_add(&self, deadline: Deadline) -> bool {
        deadline.tick <= self.wheel.now()
    }

    /// A new open group holding `data`; its key. `Full` when the shard holds as many groups
    /// as an id can name, `Shutdown` once closed: the data comes back.
    pub(crate) fn create_group(&mut self, data: GroupData) -> Result<Key, (Error, GroupData)> {
        if self.closed {
            return Err((Error::Shutdown, data));
        }
        self.groups
            .create(data, MAX_PER_SHARD)
            .map_err(|data| (Error::Full, data))
    }

    /// [`insert`](Self::insert) into the open group `group`: `NotFound` for a stale key,
    /// `GroupClosed` for a closed group.
    pub(crate) fn insert_in_group(
        &mut self,
        group: Key,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
    ) -> Result<Key, (Error, T)> {
        let slot = match self.groups.find_open(group) {
            Ok(slot) => slot,
            Err(error) => return Err((error, task)),
        };
        let key = self.insert_closed_to_shared_cancels(deadline, schedule, task)?;
        let entry = self.wheel.get_mut(key).expect("just inserted");
        let member = self.extras.insert_member(key, slot, entry.extra);
        entry.extra = Some(member);
        self.groups.link(&mut self.extras, slot, member);
        Ok(key)
    }

    /// Closes the group `group` to new timers; its data if that ended it.
    pub(crate) fn close_group(&mut self, group: Key) -> Result<Option<GroupData>, Error> {
        let slot = self.groups.find(group)?;
        self.groups.close(slot)
    }

    /// Cancels every timer of the group `group` and closes it (if it was not closed yet).
    pub(crate) fn delete_group(&mut self, group: Key) -> Result<GroupDeleted<T>, Error>
    where
        T: Task,
    {
        let slot = self.groups.find(group)?;
        let (mut tasks, mut cancelled) = (Vec::new(), 0);
        for key in self.groups.take_members(&mut self.extras, slot) {
            match self.cancel(key) {
                Ok(Some(removed)) => tasks.push((key, removed)),
                Ok(None) => {}
                Err(_) => continue, // a one-shot running now, or a periodic one cancelled
            }
            cancelled += 1;
        }
        let ended = self.groups.ensure_closed(slot);
        Ok(GroupDeleted {
            tasks,
            cancelled,
            group: slot,
            ended,
        })
    }

    /// `count` timers of the group in `slot` had their task dropped; the group's data if
    /// that ended it.
    pub(crate) fn dropped(&mut self, slot: Slot, count: usize) -> Option<GroupData> {
        self.groups.dropped(slot, count)
    }

    /// A timer of the group in `slot` ended after its run and its task was dropped:
    /// removes its node ([`remove_ended`](Self::remove_ended)); the group's data if that ended it.
    pub(crate) fn member_ended(&mut self, key: Key, slot: Slot) -> Option<GroupData> {
        self.remove_ended(key);
        self.groups.dropped(slot, 1)
    }

    /// Groups alive.
    pub(crate) fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Cancels a timer open to shared cancels, with shared access (`shard_lock.rs`): its
    /// node is marked, its index logged for
    /// [`take_shared_cancels`](Self::take_shared_cancels).
    #[inline]
    fn cancel_shared(&self, key: Key, log: &CancelLog) -> SharedCancel
    where
        T: Task,
    {
        let Some(slot) = log.reserve() else {
            return SharedCancel::Refused;
        };
        let cancelled =
            self.wheel
                .cancel_shared(key, Entry::may_cancel_shared, Entry::release_shared);
        slot.write((cancelled == SharedCancel::Cancelled).then_some(key.index()));
        cancelled
    }

    /// Removes the timers cancelled without the lock since it was last held, counting
    /// their cancels; their tasks drop nothing ([`Task::end_taken_without_lock`] ends
    /// them). Their places under `max_timers` were freed by their cancels.
    #[inline(never)]
    fn take_shared_cancels(&mut self, log: &CancelLog)
    where
        T: Task,
    {
        for index in log.take() {
            if let Some(entry) = self.wheel.take_cancelled(index) {
                debug_assert!(entry.extra.is_none(), "a plain timer");
                self.counters.cancelled += 1;
                if let Some(task) = entry.task {
                    task.end_taken_without_lock();
                }
            }
        }
    }

    /// drop; `Ok(None)`: a periodic run is under way and the timer ends when it returns.
    #[inline]
    pub(crate) fn cancel(&mut self, key: Key) -> Result<Option<Removed<T>>, Error>
    where
        T: Task,
    {
        let mut found = self.wheel.find(key).ok_or(Error::NotFound)?;
        match state_of(&self.extras, found.value(), found.is_pending()) {
            State::Pending | State::Due => {
                self.counters.cancelled += 1;
                let lingers = found
                    .value()
                    .task
                    .as_ref()
                    .is_some_and(|t| !t.drop_is_trivial());
                let (task, extra) = match lingers {
                    // Its task out, the node reads as running until `remove_ended`. It
                    // may stay in its list: if its tick comes first, the worker given it
                    // finds it running and leaves it.
                    true => {
                        let entry = found.value_mut();
                        (entry.task.take(), entry.extra.take())
                    }
                    false => {
                        let entry = found.remove();
                        (entry.task, entry.extra)
                    }
                };
                let group = self.remove_extra(extra);
                Ok(task.map(|task| Removed {
                    task,
                    group,
                    lingers,
                }))
            }
            State::Running { rearms: true } => {
                periodic_mut(&mut self.extras, found.value()).cancelled = true;
                self.counters.cancelled += 1;
                Ok(None)
            }
            _ => Err(Error::NotFound),
        }
    }

    /// Moves a live timer's next run to `deadline`.
    #[inline]
    pub(crate) fn reset(&mut self, key: Key, deadline: Deadline) -> Result<(), Error> {
        let mut found = self.wheel.find(key).ok_or(Error::NotFound)?;
        match state_of(&self.extras, found.value(), found.is_pending()) {
            State::Pending | State::Due => {
                let entry = found.value_mut();
                // A plain one-shot has no record to change.
                if entry.extra.is_some() {
                    // Re-armed by a delay, a wall-clock timer is no longer one.
                    self.extras.drop_wall(&mut entry.extra);
                    // The reset moves the next run: a catch-up run's way back to its grid
                    // goes.
                    if let Some(periodic) = self.extras.periodic_mut(entry.extra) {
                        periodic.reset_to = None;
                    }
                }
                entry.rounded_up = RoundedUp::of(deadline);
                found.reset(deadline.tick);
                Ok(())
            }
            State::Running { rearms: true } => {
                periodic_mut(&mut self.extras, found.value()).reset_to = Some(deadline);
                Ok(())
            }
            _ => Err(Error::NotFound),
        }
    }

    /// The timer's state (see `lifecycle.rs`); `None` when no timer has this key. The one
    /// place that reads it from the entry, the wheel and the timer's record.
    #[inline]
    pub(crate) fn state(&self, key: Key) -> Option<State> {
        let (entry, in_wheel) = self.wheel.get_and_pending(key)?;
        Some(state_of(&self.extras, entry, in_wheel))
    }

    /// Whether the timer will run (again) unless cancelled.
    pub(crate) fn is_live(&self, key: Key) -> bool {
        self.state(key).is_some_and(State::is_live)
    }

    /// Whether its task is out with a worker (see [`State::is_running`]).
    pub(crate) fn is_running(&self, key: Key) -> bool {
        self.state(key).is_some_and(State::is_running)
    }

    /// Expires what is due by `now`, handing each key to `due` with its deadline; on a
    /// wheel that keeps the order of adds, in that order. Call
    /// [`move_ahead`](Self::move_ahead) after.
    pub(crate) fn expire_due(&mut self, now: u64, mut due: impl FnMut(Key, Deadline))
    where
        T: Task,
    {
        let mut keys = std::mem::take(&mut self.expired);
        self.wheel.expire_due(now, |key| keys.push(key));
        // Added already due, and neither cancelled, reset nor started since.
        let mut due_on_add = std::mem::take(&mut self.due_on_add);
        keys.extend(
            due_on_add
                .drain(..)
                .filter(|&key| self.state(key) == Some(State::Due)),
        );
        self.due_on_add = due_on_add;
        if self.add_order.is_kept() {
            keys.sort_unstable_by_key(|key| self.add_order.of(key.index()));
        }
        for key in keys.drain(..) {
            let entry = self.wheel.get(key).expect("expired keys are live");
            if let Some(task) = &entry.task {
                task.warm();
            }
            due(key, self.deadline(key).expect("expired keys are live"));
        }
        self.expired = keys;
    }

    /// The wheel's work ahead of time; returns the next tick at which the wheel has work.
    pub(crate) fn move_ahead(&mut self) -> Option<u64> {
        self.wheel.move_ahead();
        self.next_expiry()
    }

    pub(crate) fn next_expiry(&self) -> Option<u64> {
        if !self.due_on_add.is_empty() {
            return Some(self.wheel.now());
        }
        self.wheel.next_expiry()
    }

    pub(crate) fn has_wall_timers(&self) -> bool {
        self.extras.has_walls()
    }

    /// Takes the task of an expired timer, queued for its deadline `queued`, for a run at
    /// `now_ns`. `None` if the id went stale, was re-armed, is running already (the queue
    /// may hold an id more than once), is not due yet (the tick thread expires a tick early
    /// and holds a timer until its exact deadline), or was reset since it was queued: that
    /// older entry must neither start it early nor ahead of the runs due before its new
    /// deadline (the entry of its new deadline starts it).
    #[inline]
    pub(crate) fn start(
        &mut self,
        key: Key,
        queued: Deadline,
        now_ns: u64,
        clock: &Clock,
    ) -> Option<Run<T>> {
        if self.state(key) != Some(State::Due) {
            return None;
        }
        let deadline = self.deadline(key)?;
        if deadline != queued || clock.exact_ns(deadline) > now_ns {
            return None;
        }
        let entry = self.wheel.get_mut(key)?;
        let task = entry.task.take()?;
        self.counters.fired += 1;
        let (periodic, group) = self.extras.run_kind(entry.extra);
        if !periodic {
            self.counters.fired_one_shot += 1;
        }
        Some(Run {
            task,
            deadline,
            started_ns: now_ns,
            periodic,
            group,
        })
    }

    /// Ends a periodic timer's run: it goes back into the wheel (its next deadline comes
    /// back), or, cancelled, it ends and its task comes back to be dropped. An ended
    /// timer's node stays, as if still running, until [`remove_ended`](Self::remove_ended): so
    /// `cancel_sync` waits until the task is dropped.
    pub(crate) fn finish(&mut self, key: Key, run: Run<T>, clock: &Clock) -> Finished<T> {
        let Run {
            task, started_ns, ..
        } = run;
        // The node is gone only when the shard was closed under the run (the runtime was
        // dropped from a callback): the timer ends with it.
        let (Some(due), Some(entry)) = (self.deadline(key), self.wheel.get_mut(key)) else {
            return Finished::Ended(task);
        };
        let periodic = match self.extras.periodic_mut(entry.extra) {
            Some(periodic) if !periodic.cancelled => periodic, // Running { rearms: true }
            _ => return Finished::Ended(task),                 // Cancelling
        };
        entry.task = Some(task);
        let next = periodic.next(clock.exact_ns(due), started_ns, clock);
        place(&mut self.wheel, key, next);
        Finished::Rearmed(next)
    }

    /// Hands to `visit` every timer that will run unless cancelled and whose task is here:
    /// pending, or due and waiting for a worker. Returns how many were left out because
    /// their task is out with a running callback: periodic timers that will be pending
    /// again when it returns (a running one-shot is no longer pending: not counted).
    pub(crate) fn export<'a>(
        &'a self,
        mut visit: impl FnMut(Key, Deadline, Schedule, &'a T),
    ) -> usize {
        let mut running = 0;
        for (key, tick, entry) in self.wheel.entries() {
            match &entry.task {
                Some(task) => {
                    let deadline = Deadline {
                        tick,
                        rounded_up_ns: entry.rounded_up.ns(),
                    };
                    visit(key, deadline, self.extras.schedule(entry.extra), task);
                }
                None => running += usize::from(self.state(key) == Some(RUNNING_PERIODIC)),
            }
        }
        running
    }

    /// The timers the shard holds (pending, queued or running).
    pub(crate) fn timers(&self) -> usize {
        self.wheel.len()
    }

    /// Removes the node of a timer whose run ended, once its task has been dropped.
    #[inline]
    pub(crate) fn remove_ended(&mut self, key: Key) {
        if self.is_running(key) {
            self.remove(key);
        }
    }

    /// A live timer's deadline: its tick in the wheel, its exact time in the entry.
    pub(crate) fn deadline(&self, key: Key) -> Option<Deadline> {
        Some(Deadline {
            tick: self.wheel.deadline(key)?,
            rounded_up_ns: self.wheel.get(key)?.rounded_up.ns(),
        })
    }

    /// Keeps the record of a timer just inserted.
    fn attach(&mut self, key: Key, extra: Extra) {
        if let Some(entry) = self.wheel.get_mut(key) {
            entry.extra = Some(self.extras.insert(extra));
        }
    }

    /// Removes the node and its record (taking a group's timer off its list); its task if
    /// it still holds one, and its group.
    #[inline]
    fn remove(&mut self, key: Key) -> (Option<T>, Option<Slot>) {
        let Some(entry) = self.wheel.remove(key) else {
            return (None, None);
        };
        (entry.task, self.remove_extra(entry.extra))
    }

    /// Frees the records of a removed timer; its group's slot if it was in one.
    #[inline]
    fn remove_extra(&mut self, extra: Option<ExtraId>) -> Option<Slot> {
        match extra {
            Some(extra) if self.extras.group(Some(extra)).is_some() => self.remove_member(extra),
            Some(extra) => self.extras.remove(extra),
            None => None,
        }
    }

    /// Takes a group's timer whose node was removed off its group's list and frees its
    /// records; its group. Out of the way of the timers outside groups.
    #[cold]
    #[inline(never)]
    fn remove_member(&mut self, member: ExtraId) -> Option<Slot> {
        self.groups.unlink(&mut self.extras, member);
        self.extras.remove(member)
    }

    /// Re-places pending wall-clock timers after the system clock was stepped.
    pub(crate) fn replace_wall_timers(&mut self, clock: &Clock, wall_offset_ns: i64) {
        for (key, when) in self.extras.walls() {
            if self.wheel.is_pending(key) {
                place(
                    &mut self.wheel,
                    key,
                    clock.deadline_at(when, wall_offset_ns),
                );
            }
        }
    }

    /// Closes the shard to adds and takes every task out, for shutdown, with the groups of
    /// those in a group: after dropping them, tell the groups ([`end_groups`](Self::end_groups)).
    /// Every group is closed.
    pub(crate) fn close(&mut self) -> (Vec<T>, Vec<Slot>) {
        self.closed = true;
        // Sized at once: doubling would ask for up to twice the room, all of it at the end.
        let (mut tasks, mut groups) = (Vec::with_capacity(self.wheel.len()), Vec::new());
        // A periodic timer running now (closed from a callback) ends when its run returns:
        // discarded too, though its task is not here.
        let mut running_periodic = 0;
        let extras = &self.extras;
        self.wheel.drain(|_, entry| {
            // The node has left the wheel: only whether the task is here and the periodic
            // record tell the state (`Due` stands for `Pending` too).
            let task_here = entry.task.is_some();
            let periodic = extras.periodic(entry.extra).filter(|_| !task_here);
            let state = State::of(task_here, false, periodic);
            running_periodic += u64::from(state == RUNNING_PERIODIC);
            if state.holds_task() {
                groups.extend(extras.group(entry.extra));
            }
            tasks.extend(entry.task);
        });
        self.extras.clear();
        self.groups.close_all();
        self.due_on_add.clear();
        self.counters.discarded += tasks.len() as u64 + running_periodic;
        (tasks, groups)
    }

    /// For shutdown, after the tasks [`close`](Self::close) took out were dropped: tells
    /// their groups; the data of every group left without a timer.
    pub(crate) fn end_groups(&mut self, dropped: Vec<Slot>) -> Vec<GroupData> {
        let mut ended: Vec<_> = dropped
            .into_iter()
            .filter_map(|slot| self.groups.dropped(slot, 1))
            .collect();
        ended.extend(self.groups.end_idle());
        ended
    }
}

/// A periodic timer whose callback runs and that goes back into the wheel after it.
const RUNNING_PERIODIC: State = State::Running { rearms: true };

/// The state of a timer from its entry, whether its node is in the wheel, and its records.
#[inline]
fn state_of<T>(extras: &Extras, entry: &Entry<T>, in_wheel: bool) -> State {
    let task_here = entry.task.is_some();
    // Only a running timer's record matters: whether it is periodic, and cancelled.
    let periodic = match task_here {
        true => None,
        false => extras.periodic(entry.extra),
    };
    State::of(task_here, in_wheel, periodic)
}

/// The periodic schedule of a timer in the state `Running { rearms: true }`.
fn periodic_mut<'a, T>(extras: &'a mut Extras, entry: &Entry<T>) -> &'a mut Periodic {
    extras
        .periodic_mut(entry.extra)
        .expect("a timer that rearms is periodic")
}

/// Moves a live timer to `deadline`.
fn place<T>(wheel: &mut Wheel<Entry<T>>, key: Key, deadline: Deadline) {
    if let Some(entry) = wheel.get_mut(key) {
        entry.rounded_up = RoundedUp::of(deadline);
        wheel.reset(key, deadline.tick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::shard_lock::LOG_SLOTS;
    use crate::runtime::PeriodMode;
    use std::time::{Duration, SystemTime};

    #[test]
    fn ids_round_trip_through_shards() {
        let mut wheel = Wheel::new();
        let key = wheel.insert(5, ()).unwrap();
        let last_generation_and_index = (u64::from(u32::MAX) << 32) | (MAX_PER_SHARD as u64 - 1);
        let keys = [key, Key::from_u64(last_generation_and_index).unwrap()];
        for ids in [Ids { shift: 0 }, Ids::next(), Ids { shift: 255 << 24 }] {
            for (shard, key) in [0, 1, MAX_SHARDS - 1].into_iter().zip(keys) {
                let id = ids.encode(shard, key);
                assert_eq!(ids.decode(id), (shard, Some(key)));
            }
        }
    }

    #[test]
    fn shifting_a_generation_wraps_around_its_cycle_as_the_remainder_does() {
        let edges = [0, 1, 2, GROUP_SHIFT, GENERATIONS - 1, GENERATIONS];
        for generation in edges.into_iter().filter(|&g| g != 0) {
            for by in edges {
                let expected = (generation - 1 + by) % GENERATIONS + 1;
                assert_eq!(shifted(generation, by), expected, "{generation} by {by}");
            }
        }
        assert_eq!(shifted(0, 5), 0);
    }

    #[test]
    fn the_ids_of_two_runtimes_meet_only_after_2_pow_24_minus_1_reuses_of_a_slot() {
        let key = |generation: u64| Key::from_u64((generation << 32) | 7).unwrap();
        let generation = |k: Option<Key>| k.map_or(0, |k| k.to_u64() >> 32);
        let shard = 3;
        // The closest shifts of two runtimes, both ways round: 255 · 2^24 apart, which is
        // 2^24 − 1 the other way round the cycle.
        let (low, high) = (Ids { shift: 0 }, Ids { shift: 255 << 24 });
        let (_, seen) = high.decode(low.encode(shard, key(1)));
        assert_eq!(
            generation(seen),
            1 << 24,
            "meets a slot reused 2^24 − 1 times"
        );
        let (_, seen) = low.decode(high.encode(shard, key(1 << 24)));
        assert_eq!(generation(seen), 1, "its own slot reused 2^24 − 1 times");
        let (a, b) = (Ids::next(), Ids::next());
        for g in [1, 2, 1000, (1 << 24) - 1] {
            assert_ne!(a.encode(shard, key(g)), b.encode(shard, key(g)));
        }
        let none = TimerId::from_u64(u64::from(u32::MAX)).unwrap();
        assert_eq!(a.decode(none).1, None, "generation 0 names no key");
    }

    const SECOND: u64 = 1_000_000_000;

    /// A shard with one fixed-rate timer, first due at `first_ns` on `clock`, every second.
    fn every_second(clock: &Clock, first_ns: u64) -> (ShardState<fn(TimerId)>, Key) {
        let mut state = ShardState::new(usize::MAX, 0);
        let every = Schedule::Every {
            period: SECOND,
            mode: PeriodMode::FixedRate,
        };
        let noop: fn(TimerId) = |_| {};
        let key = state.insert(clock.deadline_of(first_ns), every, noop);
        (state, key.ok().unwrap())
    }

    /// Expires, starts (at its exact time) and finishes the timer's next run; the exact
    /// time it was due.
    fn run_next(state: &mut ShardState<fn(TimerId)>, key: Key, clock: &Clock) -> u64 {
        let due = state.deadline(key).unwrap();
        state.expire_due(due.tick, |_, _| {});
        let run = state.start(key, due, clock.exact_ns(due), clock).unwrap();
        assert_eq!(run.deadline, due);
        assert!(matches!(
            state.finish(key, run, clock),
            Finished::Rearmed(_)
        ));
        clock.exact_ns(due)
    }

    #[test]
    fn a_fixed_rate_timer_runs_at_exact_points_each_rounded_up_on_its_own() {
        // 1 s on a 300 ms tick: due at ticks 4, 7, 10, 14, ... (not every 4 ticks). The runs
        // return at once (the clock has barely moved): no point is missed.
        let clock = Clock::new(Duration::from_millis(300));
        let (mut state, key) = every_second(&clock, SECOND);
        for n in 1..=30u64 {
            let due = state.deadline(key).unwrap();
            assert_eq!(due.tick, (10 * n).div_ceil(3), "run {n}");
            assert_eq!(run_next(&mut state, key, &clock), n * SECOND);
        }
    }

    #[test]
    fn a_run_that_returns_late_is_followed_by_the_latest_point_due() {
        // The first point (1 s) starts on time and returns 3.5 s after the origin: 2 s passed
        // entirely, 3 s is due and runs next (at once), then the grid goes on at 4 s.
        let clock = Clock::started_ago(Duration::from_millis(300), Duration::from_millis(3500));
        let (mut state, key) = every_second(&clock, SECOND);
        assert_eq!(run_next(&mut state, key, &clock), SECOND);
        assert!(state.deadline(key).unwrap().tick <= clock.now_tick());
        assert_eq!(run_next(&mut state, key, &clock), 3 * SECOND);
        assert_eq!(run_next(&mut state, key, &clock), 4 * SECOND);
    }

    #[test]
    fn a_wall_clock_timer_reset_by_a_delay_is_one_no_more() {
        let clock = Clock::new(Duration::from_millis(1));
        let mut state = ShardState::new(usize::MAX, 0);
        let noop: fn(TimerId) = |_| {};
        let at = Schedule::At(SystemTime::now() + Duration::from_secs(1));
        let key = state
            .insert(clock.deadline_of(SECOND), at, noop)
            .ok()
            .unwrap();
        assert!(state.has_wall_timers() && state.is_live(key));
        state.reset(key, clock.deadline_of(2 * SECOND)).unwrap();
        assert!(!state.has_wall_timers() && state.is_live(key));
        assert!(state.cancel(key).unwrap().is_some());
        assert!(!state.is_live(key));
    }

    #[test]
    fn a_periodic_timer_cancelled_during_its_run_ends_when_it_returns() {
        let clock = Clock::new(Duration::from_millis(1));
        let (mut state, key) = every_second(&clock, SECOND);
        let due = state.deadline(key).unwrap();
        state.expire_due(due.tick, |_, _| {});
        let run = state.start(key, due, u64::MAX, &clock).unwrap();
        assert!(run.periodic && state.is_live(key));
        assert!(
            state.cancel(key).unwrap().is_none(),
            "ends when the run returns"
        );
        assert!(!state.is_live(key));
        assert_eq!(state.cancel(key).err(), Some(Error::NotFound));
        assert!(matches!(state.finish(key, run, &clock), Finished::Ended(_)));
        state.remove_ended(key);
        assert!(state.wheel.get(key).is_none() && state.close().0.is_empty());
    }

    fn noop(_: TimerId) {}

    /// A task whose drop is trivial only on the thread that asks (as Python's can be):
    /// its type does not allow cancels without the lock.
    struct TrivialHere;

    impl Task for TrivialHere {
        fn run(&mut self, _: TimerId) {}

        fn drop_is_trivial(&self) -> bool {
            true
        }
    }

    /// A shard holding a one-shot of `task` a second away on `clock`, a plain one unless
    /// `schedule` or the task says otherwise.
    fn shard_with<T: Task>(clock: &Clock, schedule: Schedule, task: T) -> (Shard<T>, Key) {
        let shard = Shard::new(usize::MAX, 0);
        let key = shard
            .lock()
            .insert(clock.deadline_of(SECOND), schedule, task);
        (shard, key.ok().unwrap())
    }

    #[test]
    fn a_plain_pending_timer_is_cancelled_once_without_the_lock() {
        let clock = Clock::new(Duration::from_millis(1));
        let (shard, key) = shard_with(&clock, Schedule::Once, noop as fn(TimerId));
        assert_eq!(shard.cancel_shared(key), SharedCancel::Cancelled);
        assert_eq!(shard.cancel_shared(key), SharedCancel::NotFound, "once");
        let mut state = shard.lock();
        assert_eq!(
            state.counters.cancelled, 1,
            "counted when the lock is next held"
        );
        assert_eq!(state.timers(), 0, "removed then");
        assert!(!state.is_live(key) && state.reset(key, clock.deadline_of(SECOND)).is_err());
        state.expire_due(u64::MAX, |_, _| panic!("a cancelled timer expired"));
    }

    #[test]
    fn a_due_or_running_timer_is_refused_without_the_lock_and_stays() {
        let clock = Clock::new(Duration::from_millis(1));
        let (shard, key) = shard_with(&clock, Schedule::Once, noop as fn(TimerId));
        let due = shard.lock().deadline(key).unwrap();
        shard.lock().expire_due(due.tick, |_, _| {});
        assert_eq!(shard.cancel_shared(key), SharedCancel::Refused, "due");
        shard.lock().start(key, due, u64::MAX, &clock).unwrap();
        assert_eq!(shard.cancel_shared(key), SharedCancel::Refused, "running");
        assert_eq!(shard.lock().timers(), 1);
    }

    #[test]
    fn only_plain_one_shots_are_opened_to_cancels_without_the_lock() {
        let clock = Clock::new(Duration::from_millis(1));
        let every = Schedule::Every {
            period: SECOND,
            mode: PeriodMode::FixedRate,
        };
        let (shard, periodic) = shard_with(&clock, every, noop as fn(TimerId));
        assert_eq!(shard.cancel_shared(periodic), SharedCancel::Refused);
        let owns_a_string = |_: TimerId| drop(String::new());
        let (shard_2, plain) = shard_with(&clock, Schedule::Once, owns_a_string);
        assert_eq!(
            shard_2.cancel_shared(plain),
            SharedCancel::Cancelled,
            "owns nothing"
        );
        let owned = String::from("dropped at its end");
        let (shard_3, owning) = shard_with(&clock, Schedule::Once, move |_: TimerId| {
            let _ = &owned;
        });
        assert_eq!(
            shard_3.cancel_shared(owning),
            SharedCancel::Refused,
            "drops code"
        );
        let (shard_4, not_allowed) = shard_with(&clock, Schedule::Once, TrivialHere);
        assert_eq!(
            shard_4.cancel_shared(not_allowed),
            SharedCancel::Refused,
            "not allowed"
        );
        let mut state = shard.lock();
        let group = state.create_group(Box::new(())).ok().unwrap();
        let member = state
            .insert_in_group(group, clock.deadline_of(SECOND), Schedule::Once, noop)
            .ok()
            .unwrap();
        drop(state);
        assert_eq!(
            shard.cancel_shared(member),
            SharedCancel::Refused,
            "in a group"
        );
        let stale = Key::from_u64(periodic.to_u64() + (1 << 32)).unwrap();
        assert_eq!(shard.cancel_shared(stale), SharedCancel::NotFound);
        let beyond = Key::from_u64((1 << 32) | 1_000_000).unwrap();
        assert_eq!(shard.cancel_shared(beyond), SharedCancel::NotFound);
    }

    #[test]
    fn a_full_log_sends_cancels_to_the_lock_which_empties_it() {
        let clock = Clock::new(Duration::from_millis(1));
        let shard = Shard::new(usize::MAX, 0);
        let keys: Vec<Key> = (0..LOG_SLOTS + 1)
            .map(|_| {
                let added = shard
                    .lock()
                    .insert(clock.deadline_of(SECOND), Schedule::Once, noop);
                added.ok().unwrap()
            })
            .collect();
        for &key in &keys[..LOG_SLOTS] {
            assert_eq!(shard.cancel_shared(key), SharedCancel::Cancelled);
        }
        assert_eq!(
            shard.cancel_shared(keys[LOG_SLOTS]),
            SharedCancel::Refused,
            "full"
        );
        assert_eq!(shard.lock().timers(), 1, "the log emptied");
        assert_eq!(
            shard.cancel_shared(keys[LOG_SLOTS]),
            SharedCancel::Cancelled
        );
    }

    #[test]
    fn a_held_lock_sends_cancels_to_it() {
        let clock = Clock::new(Duration::from_millis(1));
        let (shard, key) = shard_with(&clock, Schedule::Once, noop as fn(TimerId));
        let state = shard.lock();
        assert_eq!(shard.cancel_shared(key), SharedCancel::Refused);
        drop(state);
        assert_eq!(shard.cancel_shared(key), SharedCancel::Cancelled);
    }

    /// The C task's shape: a callback and its argument (a timer with a drop function keeps
    /// the three in a box its argument points to).
    #[allow(dead_code)]
    struct TwoWords(fn(u64), *mut u8);

    #[test]
    fn a_node_holding_the_c_task_is_six_words() {
        assert_eq!(std::mem::size_of::<Entry<TwoWords>>(), 24);
        assert_eq!(Wheel::<Entry<TwoWords>>::node_size(), 48);
    }
}
