//! The runtime's shared state and the calls on it: add, cancel, reset, groups, the shards'
//! expiry for the tick round (`ticker.rs`), stats, export and the drop of what ended. The
//! tick round, the runs (`worker.rs`) and the threads' start and shutdown (`threads.rs`)
//! use it; it uses none of them.

use std::cell::Cell;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use super::callback::{current_timer, drop_task_of, holding_here, running};
use super::clock::{Clock, Deadline};
use super::drops::DropRecord;
use super::executor::Executor;
use super::export::{exporting_here, Ending, ExportGuard, Exports};
use super::extras::{Schedule, Slot};
use super::fork::{self, Held, Lockable};
use super::group::{GroupData, GroupId};
use super::metrics::{Metrics, Reading, Window};
use super::shard::{Ids, Removed, Shard, MAX_SHARDS};
use super::stats::Histogram;
use super::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use super::sync::{thread_local, Mutex};
use super::wake::Ticker;
use super::{Config, Error, Rejected, Stats, Task, TimerId};
use crate::wheel::{Key, SharedCancel};

/// Process-wide, so std's in every build (loom's atomics live inside one model run).
static NEXT_THREAD_HINT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    /// The calling thread's place among the threads that used a runtime (`UNSET` until it
    /// adds a timer or creates a group), which picks its shard ([`own_shard`]) and the
    /// shard of its first group. Every add reads it ([`thread_hint`]): const, it costs no
    /// check of a lazy set-up.
    static THREAD_HINT: Cell<usize> = const { Cell::new(UNSET) };
    /// The shard this thread creates its next group in: each group goes to the next one,
    /// so that one thread's groups, and their timers, spread over the shards.
    static NEXT_GROUP_SHARD: Cell<usize> = Cell::new(thread_hint());
}

/// [`THREAD_HINT`] not taken yet.
const UNSET: usize = usize::MAX;

/// The calling thread's [`THREAD_HINT`], taken at its first call.
#[inline]
fn thread_hint() -> usize {
    match THREAD_HINT.with(Cell::get) {
        UNSET => take_thread_hint(),
        taken => taken,
    }
}

/// A new [`THREAD_HINT`] for the calling thread.
#[cold]
fn take_thread_hint() -> usize {
    let taken = NEXT_THREAD_HINT.fetch_add(1, Relaxed) & (UNSET >> 1);
    THREAD_HINT.with(|hint| hint.set(taken));
    taken
}

/// The shard, of `shards` (a power of two), the calling thread adds its timers outside
/// groups to: one of its own, so that threads adding at once share no lock and no cache
/// line (two threads adding to shards picked by deadline spent most of each add waiting
/// for lines the other had written: 4x to 5x slower in W5). Timers one thread adds share
/// a shard, so among equal deadlines they start in the order added.
#[inline]
fn own_shard(shards: usize) -> usize {
    thread_hint() & (shards - 1)
}

/// The shard, of `shards` (a power of two), of the calling thread's next group (see
/// [`NEXT_GROUP_SHARD`]).
fn next_group_shard(shards: usize) -> usize {
    let next = NEXT_GROUP_SHARD.with(|next| next.replace(next.get().wrapping_add(1)));
    next & (shards - 1)
}

/// Why [`RuntimeState::add_many_at`] stopped inserting into one shard.
enum ChunkStop<T> {
    /// The shard holds all it can: the timer goes on to the next one.
    ShardFull((SystemTime, T)),
    /// The add is refused (`max_timers`, a shutdown): the timer is dropped.
    Refused(Error, T),
}

/// Why a shard refused one timer: with the task, and for a full shard the `publish` of
/// the id too, for the next shard.
enum Refused<T, P> {
    /// The shard holds all it can.
    Full(T, P),
    /// The add is refused.
    Other(Error, T),
}

/// Timers a bulk add inserts under one taking of the shard's lock: the tick thread waits
/// for at most one chunk.
const BULK_CHUNK: usize = 4096;

/// The capacity limit across shards; free of atomics when there is none.
struct Capacity {
    limit: usize,
    live: AtomicUsize,
}

/// The places of `max_timers`: an add takes one; every edge of the life cycle on which a
/// timer stops being pending gives its place back (see `lifecycle.rs`): a refused add, a
/// cancel, a one-shot's start, a group's delete, a shutdown's discard.
impl Capacity {
    /// Takes a place; false when none is free.
    fn take(&self) -> bool {
        if self.limit == 0 {
            return true;
        }
        if self.live.fetch_add(1, Relaxed) < self.limit {
            return true;
        }
        self.live.fetch_sub(1, Relaxed);
        false
    }

    /// `pending` bounded by the limit, if there is one.
    fn at_most(&self, pending: u64) -> u64 {
        match self.limit {
            0 => pending,
            limit => pending.min(limit as u64),
        }
    }

    /// Gives back the places of `count` timers no longer pending.
    fn give_back(&self, count: usize) {
        if self.limit != 0 && count != 0 {
            self.live.fetch_sub(count, Relaxed);
        }
    }
}

pub(crate) struct RuntimeState<T> {
    pub(crate) config: Config,
    pub(crate) clock: Clock,
    shards: Box<[Shard<T>]>,
    /// How this runtime's ids are written: unlike another runtime's.
    ids: Ids,
    pub(crate) executor: Executor,
    pub(crate) ticker: Ticker,
    capacity: Capacity,
    pub(crate) lateness: Histogram,
    pub(crate) panics: AtomicU64,
    /// `config.slow_callback` in nanoseconds; `None` when unset.
    pub(crate) slow_callback_ns: Option<u64>,
    pub(crate) slow_callbacks: AtomicU64,
    /// The readings of the last-minute view.
    window: Mutex<Window>,
    shutting_down: AtomicBool,
    /// The system clock minus the monotonic one when wall-clock timers were last placed.
    wall_offset: AtomicI64,
    /// A process-wide default: never shut down.
    pub(crate) shared: bool,
    /// The fork generation the runtime started in (see `fork.rs`).
    fork_generation: u64,
    /// Exports under way, and the drops they defer (see `export.rs`).
    exports: Exports<Ending<T>>,
    /// The `Arc` this runtime lives in ([`keep_alive`](Self::keep_alive)).
    me: Weak<RuntimeState<T>>,
}

/// The exportable timers of one instant, copied ([`RuntimeState::export`]).
pub(crate) struct Snapshot<'a, A, T, S> {
    /// What was read at that instant.
    pub(crate) at: A,
    /// Deadline, id, schedule and the copy of each task, in deadline order, then id order.
    pub(crate) timers: Vec<(Deadline, TimerId, Schedule, S)>,
    /// Periodic timers left out because their callback was running.
    pub(crate) running: usize,
    /// The export under way: drop it once the copies were read, the deferred drops run then.
    pub(crate) exporting: ExportGuard<'a, Ending<T>>,
}

impl<T: Task> RuntimeState<T> {
    pub(crate) fn new(config: Config, shared: bool) -> Arc<Self> {
        Arc::new_cyclic(|me| RuntimeState {
            me: me.clone(),
            ..Self::with_shard_limit(config, shared, usize::MAX)
        })
    }

    /// This runtime, kept until the result is dropped: for a call that runs a drop on its
    /// caller's thread and goes on afterwards. The drop may shut the runtime down without
    /// waiting and let its owner free the handle the call came through (a C wheel is
    /// freed once none of its threads is left: at once on a manual wheel).
    fn keep_alive(&self) -> Option<Arc<Self>> {
        self.me.upgrade()
    }

    /// [`new`](Self::new), each shard holding at most `shard_limit` timers (a test's small
    /// stand-in for [`MAX_PER_SHARD`](super::shard::MAX_PER_SHARD)).
    fn with_shard_limit(config: Config, shared: bool, shard_limit: usize) -> Self {
        let clock = match config.virtual_start {
            Some(start) => Clock::new_virtual(config.tick, start),
            None => Clock::new(config.tick),
        };
        let wall_offset = AtomicI64::new(saturate_i64(clock.wall_offset_ns()));
        let slow_callback_ns = config
            .slow_callback
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        // One shard under loom too: the models follow timers through their shard, and the
        // shard hints, counted across model runs, would make one run differ from the next.
        let shard_count = if config.manual || cfg!(loom) {
            1
        } else {
            let cpus = super::config::cpus();
            cpus.max(4).next_power_of_two().min(MAX_SHARDS)
        };
        // `max_timers` counts pending timers (`Capacity`); a shard also holds the nodes of
        // timers that run or drop, so it is bounded only by what an id can name.
        let shards: Box<[Shard<T>]> = (0..shard_count)
            .map(|_| Shard::new(shard_limit, 0))
            .collect();
        if config.manual {
            shards
                .iter()
                .for_each(|shard| shard.lock().keep_add_order());
        }
        RuntimeState {
            executor: Executor::new(
                config.min_workers,
                config.max_workers,
                config.worker_keepalive,
            ),
            capacity: Capacity {
                limit: config.max_timers,
                live: AtomicUsize::new(0),
            },
            config,
            clock,
            shards,
            ids: Ids::next(),
            ticker: Ticker::default(),
            lateness: Histogram::new(),
            panics: AtomicU64::new(0),
            slow_callback_ns,
            slow_callbacks: AtomicU64::new(0),
            window: Mutex::new(Window::new()),
            shutting_down: AtomicBool::new(false),
            wall_offset,
            shared,
            fork_generation: fork::generation(),
            exports: Exports::default(),
            me: Weak::new(),
        }
    }

    pub(crate) fn id(&self) -> usize {
        self as *const Self as usize
    }

    /// Whether this process is a fork() child of the one that started the runtime.
    #[inline]
    pub(crate) fn forked(&self) -> bool {
        self.fork_generation != fork::generation()
    }

    #[inline]
    pub(crate) fn check_open(&self) -> Result<(), Error> {
        if self.forked() {
            return Err(Error::Forked);
        }
        if self.is_shut_down() {
            return Err(Error::Shutdown);
        }
        match self.exports.under_way() && exporting_here(self.id()) {
            true => Err(Error::Busy),
            false => Ok(()),
        }
    }

    /// Drops the task of a timer that ended, or, while an export's function runs, once it
    /// returned (see `export.rs`). In a fork() child at once: an export of the parent's
    /// threads never ends there. A task whose drop is trivial is dropped at once, anywhere.
    /// For a shutdown's discards; a cancel's task goes through [`end_removed`](Self::end_removed).
    #[inline]
    fn end_task(&self, task: T) {
        match task.drop_is_trivial() {
            true => drop(task),
            false => self.end(Ending::Task(task)),
        }
    }

    /// [`end`](Self::end) as the drop of the timer `id`, whoever runs it (the worker after
    /// the run, a cancel): a call of the drop function on that timer is one from its own
    /// drop (`cancel_sync` of it is `Busy`), and a shutdown does not wait for this thread.
    /// Out of line: the paths of plain timers never come here.
    #[inline(never)]
    pub(crate) fn end_for(&self, id: TimerId, ended: Ending<T>) {
        self.end_standing_for(id.as_u64(), ended);
    }

    /// Drops what ended now or, while an export is under way, once it is over (in the
    /// order things ended, so a group's data after its timers' tasks), standing for the
    /// timer whose callback or drop runs on this thread, if any.
    pub(crate) fn end(&self, ended: Ending<T>) {
        self.end_standing_for(current_timer(self.id()), ended);
    }

    /// [`end`](Self::end), the drop standing for the timer `timer` (0: none; see
    /// [`drop_task_of`]).
    fn end_standing_for(&self, timer: u64, ended: Ending<T>) {
        let (runtime, panics) = (self.id(), &self.panics);
        match self.forked() {
            true => drop_task_of(ended, runtime, timer, panics),
            false => self.exports.drop_or_defer(ended, runtime, timer, panics),
        }
    }

    /// Waits until the drops deferred by exports have run (none in a fork() child).
    fn wait_for_deferred_drops(&self) {
        if !self.forked() {
            self.exports.wait_settled(self.id());
        }
    }

    /// Returns once the drop of timer `id` has run, if an export deferred it (none in a
    /// fork() child).
    fn wait_for_deferred_drop(&self, id: TimerId) {
        if !self.forked() {
            (self.exports).wait_for_drop_of(self.id(), id.as_u64(), &self.panics);
        }
    }

    /// Starts loading the node of timer `id` into the cache (see
    /// [`Hold::prefetch_ahead`](super::Hold::prefetch_ahead)).
    #[inline]
    pub(crate) fn prefetch(&self, id: TimerId) {
        let _ = self.shard_of(id);
    }

    /// The shard and key of timer `id`. Starts loading its node into the cache, so that the
    /// miss overlaps what comes before the node is read (the lock, the checks).
    #[inline]
    pub(crate) fn shard_of(&self, id: TimerId) -> Result<(&Shard<T>, Key), Error> {
        match self.ids.decode(id) {
            (shard, Some(key)) if shard < self.shards.len() => {
                let shard = &self.shards[shard];
                shard.prefetch_node(key);
                Ok((shard, key))
            }
            _ => Err(Error::NotFound),
        }
    }

    /// Whether a timer may be added: the runtime is open and below `max_timers` (a place is
    /// taken: give it back if the add fails after all).
    #[inline]
    fn admit(&self) -> Result<(), Error> {
        self.check_open()?;
        match self.capacity.take() {
            true => Ok(()),
            false => Err(Error::Full),
        }
    }

    /// Adds a timer in the calling thread's shard (see
    /// [`Runtime::add_publishing`](super::Runtime::add_publishing) for `publish`).
    #[inline]
    pub(crate) fn add<P: FnOnce(TimerId)>(
        &self,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
        publish: P,
    ) -> Result<TimerId, Rejected<T>> {
        if let Err(error) = self.admit() {
            return Err(Rejected { error, task });
        }
        let own = own_shard(self.shards.len());
        match self.insert_into(own, deadline, schedule, task, publish) {
            Ok(id) => self.added(deadline, Ok::<_, Refused<T, P>>(id)),
            Err(refused) => self.add_past(own, deadline, schedule, refused),
        }
    }

    /// A shard holds at most MAX_PER_SHARD timers: past that, one thread's timers go on in
    /// the shards after its own, `full`, which refused the timer.
    #[cold]
    #[inline(never)]
    fn add_past<P: FnOnce(TimerId)>(
        &self,
        full: usize,
        deadline: Deadline,
        schedule: Schedule,
        refused: Refused<T, P>,
    ) -> Result<TimerId, Rejected<T>> {
        let (mut task, mut publish) = match refused {
            Refused::Full(task, publish) => (task, publish),
            refused => return self.added(deadline, Err(refused)),
        };
        let mut index = self.next_shard(full);
        while index != full {
            match self.insert_into(index, deadline, schedule, task, publish) {
                Err(Refused::Full(refused, unused)) => (task, publish) = (refused, unused),
                added => return self.added(deadline, added),
            }
            index = self.next_shard(index);
        }
        self.added(deadline, Err(Refused::Full(task, publish)))
    }

    /// Inserts one timer into the shard `index`, under its lock, and hands its id to
    /// `publish` before the lock is let go: before the timer can run, or be seen by any
    /// call. Always inlined: out of line, the task and the result move through memory.
    #[inline(always)]
    fn insert_into<P: FnOnce(TimerId)>(
        &self,
        index: usize,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
        publish: P,
    ) -> Result<TimerId, Refused<T, P>> {
        let shard = &self.shards[index];
        let mut state = shard.lock();
        let added = match state.insert(deadline, schedule, task) {
            Ok(key) => Ok(self.published(index, key, publish)),
            Err((Error::Full, task)) => Err(Refused::Full(task, publish)),
            Err((error, task)) => Err(Refused::Other(error, task)),
        };
        shard.unlock_after_insert(state);
        added
    }

    /// The id of the timer just inserted as `key` into the shard `index`, handed to
    /// `publish` (under the shard's lock).
    #[inline(always)]
    fn published(&self, index: usize, key: Key, publish: impl FnOnce(TimerId)) -> TimerId {
        let id = self.ids.encode(index, key);
        publish(id);
        id
    }

    /// [`add`](Self::add) of many wall-clock one-shots (a restore), in the calling thread's
    /// shard, whose lock is taken once for each [`BULK_CHUNK`] timers rather than once per
    /// timer. Stops at the first refusal: its error (the timers added before it stay, the
    /// rest are dropped, outside the lock). The ids come in the order given.
    pub(crate) fn add_many_at(
        &self,
        timers: impl IntoIterator<Item = (SystemTime, T)>,
    ) -> Result<Vec<TimerId>, Error> {
        let mut timers = timers.into_iter().peekable();
        let mut ids = Vec::with_capacity(timers.size_hint().0);
        let mut earliest = u64::MAX;
        let own = own_shard(self.shards.len());
        let mut index = own;
        // A timer a full shard refused, for the next shard (as `add` does).
        let mut passed_on = None;
        let mut refused = None;
        while refused.is_none() && (passed_on.is_some() || timers.peek().is_some()) {
            let chunk = passed_on.take().into_iter();
            let chunk = chunk.chain(timers.by_ref().take(BULK_CHUNK));
            match self.insert_chunk(index, chunk, &mut ids, &mut earliest) {
                Ok(()) => {}
                Err(ChunkStop::ShardFull(timer)) if self.next_shard(index) != own => {
                    index = self.next_shard(index);
                    passed_on = Some(timer);
                }
                Err(ChunkStop::ShardFull(_timer)) => refused = Some(Error::Full),
                Err(ChunkStop::Refused(error, _timer)) => refused = Some(error),
            }
        }
        self.ticker.notify_if_earlier(earliest);
        refused.map_or(Ok(ids), Err)
    }

    /// Inserts `chunk` into the shard `index`, taking its lock once; pushes each timer's id
    /// to `ids`. Where it stopped, with the timer it stopped at (to be dropped outside the
    /// lock, or passed on).
    fn insert_chunk(
        &self,
        index: usize,
        chunk: impl Iterator<Item = (SystemTime, T)>,
        ids: &mut Vec<TimerId>,
        earliest: &mut u64,
    ) -> Result<(), ChunkStop<T>> {
        let mut shard = self.shards[index].lock();
        for (when, task) in chunk {
            if let Err(error) = self.admit() {
                return Err(ChunkStop::Refused(error, task));
            }
            let deadline = self.deadline_at(when);
            match shard.insert(deadline, Schedule::At(when), task) {
                Ok(key) => {
                    *earliest = (*earliest).min(deadline.tick);
                    ids.push(self.ids.encode(index, key));
                }
                Err((error, task)) => {
                    self.capacity.give_back(1);
                    return Err(match error {
                        Error::Full => ChunkStop::ShardFull((when, task)),
                        error => ChunkStop::Refused(error, task),
                    });
                }
            }
        }
        self.shards[index].unlock_after_insert(shard);
        Ok(())
    }

    /// The shard after `index`, in turn.
    fn next_shard(&self, index: usize) -> usize {
        (index + 1) & (self.shards.len() - 1)
    }

    /// After an insert: the new timer's id, or the refusal (its place under `max_timers`
    /// given back).
    #[inline]
    fn added<P>(
        &self,
        deadline: Deadline,
        added: Result<TimerId, Refused<T, P>>,
    ) -> Result<TimerId, Rejected<T>> {
        match added {
            Ok(id) => {
                self.ticker.notify_if_earlier(deadline.tick);
                Ok(id)
            }
            Err(refused) => {
                self.capacity.give_back(1);
                let (error, task) = match refused {
                    Refused::Full(task, _) => (Error::Full, task),
                    Refused::Other(error, task) => (error, task),
                };
                Err(Rejected { error, task })
            }
        }
    }

    /// A new open group holding `data` (its drop runs once the group is closed and its
    /// last timer ended), in the calling thread's next shard; refused, `data` comes back.
    pub(crate) fn create_group(&self, data: GroupData) -> Result<GroupId, Rejected<GroupData>> {
        if let Err(error) = self.check_open() {
            return Err(Rejected { error, task: data });
        }
        let index = next_group_shard(self.shards.len());
        match self.shards[index].lock().create_group(data) {
            Ok(key) => Ok(self.ids.group(index, key)),
            Err((error, task)) => Err(Rejected { error, task }),
        }
    }

    /// The shard and key a group id names.
    fn group_of(&self, id: GroupId) -> Result<(usize, Key), Error> {
        match self.ids.decode_group(id) {
            (shard, Some(key)) if shard < self.shards.len() => Ok((shard, key)),
            _ => Err(Error::NotFound),
        }
    }

    /// [`add`](Self::add) into the open group `group`, in the group's shard.
    pub(crate) fn add_in_group<P: FnOnce(TimerId)>(
        &self,
        group: GroupId,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
        publish: P,
    ) -> Result<TimerId, Rejected<T>> {
        let found = self.check_open().and_then(|()| self.group_of(group));
        let (index, group) = match found.and_then(|found| self.admit().map(|()| found)) {
            Ok(found) => found,
            Err(error) => return Err(Rejected { error, task }),
        };
        let mut state = self.shards[index].lock();
        let added = match state.insert_in_group(group, deadline, schedule, task) {
            Ok(key) => Ok(self.published(index, key, publish)),
            Err((error, task)) => Err(Refused::Other::<T, P>(error, task)),
        };
        drop(state);
        self.added(deadline, added)
    }

    /// Closes a group to new timers; its drop runs now if it has no timer left, else after
    /// the drop of its last one.
    pub(crate) fn close_group(&self, group: GroupId) -> Result<(), Error> {
        self.check_open()?;
        let (index, group) = self.group_of(group)?;
        let ended = self.shards[index].lock().close_group(group)?;
        self.drop_group(ended);
        Ok(())
    }

    /// Cancels every timer of a group and closes it: its pending timers are dropped here,
    /// its running ones when they return, and the group's drop follows the last of them.
    pub(crate) fn delete_group(&self, group: GroupId) -> Result<(), Error> {
        self.check_open()?;
        // Each drop may shut the runtime down and let it be freed before the next.
        let _alive = self.keep_alive();
        let (index, group) = self.group_of(group)?;
        let shard = &self.shards[index];
        let mut state = shard.lock();
        let mut deleted = state.delete_group(group)?;
        let ended: Vec<_> = (deleted.tasks.iter_mut())
            .map(|(key, removed)| {
                let id = self.ids.encode(index, *key);
                (id, state.record_drop(*key, id, removed))
            })
            .collect();
        drop(state);
        self.capacity.give_back(deleted.cancelled);
        let count = deleted.tasks.len();
        for ((key, removed), (id, record)) in deleted.tasks.into_iter().zip(ended) {
            self.end_removed(id, shard, key, removed.task, removed.lingers, record);
        }
        self.drop_group(deleted.ended);
        if count > 0 {
            self.dropped(shard, deleted.group, count);
        }
        Ok(())
    }

    /// `count` timers of the group in `slot` of `shard` had their task dropped: ends the
    /// group (drops its data) if they were its last and it is closed.
    fn dropped(&self, shard: &Shard<T>, slot: Slot, count: usize) {
        let ended = shard.lock().dropped(slot, count);
        self.drop_group(ended);
    }

    /// Drops the data of a group that ended, if one did.
    fn drop_group(&self, ended: Option<GroupData>) {
        if let Some(data) = ended {
            let _alive = self.keep_alive(); // the drop may let the runtime be freed
            self.end(Ending::Group(data));
        }
    }

    /// Groups alive: open, or closed with timers left.
    pub(crate) fn group_count(&self) -> usize {
        self.shards.iter().map(|shard| shard.lock().groups()).sum()
    }

    #[inline]
    pub(crate) fn cancel(&self, id: TimerId) -> Result<(), Error> {
        self.check_open()?;
        self.cancel_open(id)
    }

    /// `error`, but `Shutdown` for a timer not found once a shutdown began: the shutdown
    /// dropped it after the call found the runtime open.
    #[cold]
    fn not_found_or_shutdown(&self, error: Error) -> Error {
        match error {
            Error::NotFound if self.is_shut_down() => Error::Shutdown,
            error => error,
        }
    }

    /// [`cancel`](Self::cancel) on a runtime found open (a shutdown may begin meanwhile).
    #[inline]
    fn cancel_open(&self, id: TimerId) -> Result<(), Error> {
        let (shard, key) = self.shard_of(id)?;
        // Known when compiled: other types never try (it costs the lock word two atomics).
        if T::CANCEL_WITHOUT_LOCK || T::RELEASE_WITHOUT_LOCK {
            return match shard.cancel_shared(key) {
                SharedCancel::Cancelled => {
                    self.capacity.give_back(1);
                    Ok(())
                }
                SharedCancel::NotFound => Err(self.not_found_or_shutdown(Error::NotFound)),
                SharedCancel::Refused => self.cancel_locked_out_of_line(id, shard, key),
            };
        }
        self.cancel_locked(id, shard, key)
    }

    /// [`cancel_locked`](Self::cancel_locked) out of the way of a cancel without the lock:
    /// the path without it then saves no registers for the path with it.
    #[inline(never)]
    fn cancel_locked_out_of_line(
        &self,
        id: TimerId,
        shard: &Shard<T>,
        key: Key,
    ) -> Result<(), Error> {
        self.cancel_locked(id, shard, key)
    }

    /// [`cancel_open`](Self::cancel_open) under the shard's lock.
    #[inline]
    fn cancel_locked(&self, id: TimerId, shard: &Shard<T>, key: Key) -> Result<(), Error> {
        let mut state = shard.lock();
        let cancelled = state.cancel(key);
        let mut removed = cancelled.map_err(|error| self.not_found_or_shutdown(error))?;
        let record = removed
            .as_mut()
            .and_then(|removed| state.record_drop(key, id, removed));
        drop(state);
        self.end_cancelled(id, shard, key, removed, record);
        Ok(())
    }

    pub(crate) fn cancel_sync(&self, id: TimerId) -> Result<(), Error> {
        self.check_open()?;
        if running(|c| (c.runtime, c.timer) == (self.id(), id.as_u64())) {
            return Err(Error::Busy);
        }
        // The drop, or the run waited for, may shut the runtime down and let it be freed.
        let _alive = self.keep_alive();
        let (shard, key) = self.shard_of(id)?;
        let mut state = shard.lock();
        let mut result = state.cancel(key);
        let record = match &mut result {
            Ok(Some(removed)) => state.record_drop(key, id, removed),
            _ => None,
        };
        // Taken out here (pending or due): nothing to wait for but its drop, which is ours.
        // Otherwise a run under way, or the drop of another thread's cancel: its node
        // lingers for it, or went at that cancel, which recorded the drop.
        if !matches!(result, Ok(Some(_))) {
            state = shard.wait_not_running(state, key);
        }
        drop(state);
        if matches!(result, Err(Error::NotFound)) {
            shard.drops.wait_for(id);
        }
        let ended = result.map(|removed| self.end_cancelled(id, shard, key, removed, record));
        // A drop deferred by an export (this one's, or that of the run waited for) has run.
        self.wait_for_deferred_drop(id);
        ended.map_err(|error| self.not_found_or_shutdown(error))
    }

    /// After a cancel: the timer is no longer pending, so its place under `max_timers` is
    /// free; its task, if it came back (not running), is dropped, then its node goes if it
    /// lingered for that drop, then its group is told.
    #[inline]
    fn end_cancelled(
        &self,
        id: TimerId,
        shard: &Shard<T>,
        key: Key,
        removed: Option<Removed<T>>,
        record: Option<DropRecord<'_>>,
    ) {
        self.capacity.give_back(1);
        if let Some(Removed {
            task,
            group,
            lingers,
        }) = removed
        {
            // A drop of the user's runs here, and the shard and the group are told after it.
            let _alive =
                (lingers || record.is_some() || group.is_some()).then(|| self.keep_alive());
            self.end_removed(id, shard, key, task, lingers, record);
            if let Some(slot) = group {
                self.dropped(shard, slot, 1);
            }
        }
    }

    /// Drops the task that a cancel of timer `id` took out, by what the cancel found under
    /// the lock: a trivial drop at once; else as the timer's drop, after which its node,
    /// which lingered for that drop (see [`Removed::lingers`]), goes, or its record of the
    /// drop under way does.
    #[inline]
    fn end_removed(
        &self,
        id: TimerId,
        shard: &Shard<T>,
        key: Key,
        task: T,
        lingers: bool,
        record: Option<DropRecord<'_>>,
    ) {
        match (lingers, record) {
            (false, None) => drop(task),
            (false, Some(record)) => {
                self.end_for(id, Ending::Task(task));
                drop(record);
            }
            (true, _) => {
                self.end_for(id, Ending::Task(task));
                shard.remove_ended(&mut shard.lock(), key);
            }
        }
    }

    /// The deadline of the wall-clock time `when` (see [`Clock::deadline_at`]).
    pub(crate) fn deadline_at(&self, when: SystemTime) -> Deadline {
        self.clock.deadline_at(when, self.wall_offset.load(Relaxed))
    }

    #[inline]
    pub(crate) fn reset(&self, id: TimerId, delay: Duration) -> Result<(), Error> {
        self.check_open()?;
        self.reset_open(id, delay)
    }

    /// [`reset`](Self::reset) on a runtime found open (a shutdown may begin meanwhile).
    #[inline]
    fn reset_open(&self, id: TimerId, delay: Duration) -> Result<(), Error> {
        let (shard, key) = self.shard_of(id)?;
        let deadline = self.clock.deadline_after(delay);
        let reset = shard.lock().reset(key, deadline);
        reset.map_err(|error| self.not_found_or_shutdown(error))?;
        self.ticker.notify_if_earlier(deadline.tick);
        Ok(())
    }

    pub(crate) fn is_pending(&self, id: TimerId) -> bool {
        self.shard_of(id)
            .is_ok_and(|(shard, key)| shard.lock().is_live(key))
    }

    /// Expires every shard up to `tick`; the due ids with their deadlines, in deadline order
    /// (see [`Deadline`]: within a tick, the one that waited longest goes first), timers
    /// added already due in the order they were added among equal deadlines.
    pub(crate) fn collect_due(&self, tick: u64) -> Vec<(Deadline, TimerId)> {
        let mut keyed = Vec::new();
        for (index, shard) in self.shards.iter().enumerate() {
            shard.lock().expire_due(tick, |key, deadline| {
                keyed.push((deadline.sort_key(keyed.len()), self.ids.encode(index, key)))
            });
        }
        // Equal deadlines stay in the order expired: the keys hold it.
        keyed.sort_unstable_by_key(|&(key, _)| key);
        keyed
            .into_iter()
            .map(|(key, id)| (Deadline::of_sort_key(key), id))
            .collect()
    }

    /// The wheels' work ahead of time, after the due ids went out. Returns the next tick
    /// with work and whether wall-clock timers are pending.
    pub(crate) fn move_ahead(&self) -> (Option<u64>, bool) {
        let mut wall = false;
        let mut next = None;
        for shard in self.shards.iter() {
            let mut state = shard.lock();
            next = next.into_iter().chain(state.move_ahead()).min();
            wall |= state.has_wall_timers();
        }
        (next, wall)
    }

    pub(crate) fn next_expiry(&self) -> Option<u64> {
        self.shards
            .iter()
            .filter_map(|shard| shard.lock().next_expiry())
            .min()
    }

    /// A one-shot timer started its run: no longer pending, its place under `max_timers`
    /// is free while it runs and drops.
    pub(crate) fn one_shot_started(&self) {
        self.capacity.give_back(1);
    }

    /// Re-places wall-clock timers if the system clock moved against the monotonic one.
    pub(crate) fn follow_wall_clock(&self) {
        let now = self.clock.wall_offset_ns();
        let before = i128::from(self.wall_offset.load(Relaxed));
        if (now - before).unsigned_abs() > u128::from(self.clock.tick_ns()).max(1_000_000) {
            let offset = saturate_i64(now);
            self.wall_offset.store(offset, Relaxed);
            for shard in self.shards.iter() {
                shard.lock().replace_wall_timers(&self.clock, offset);
            }
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        for shard in self.shards.iter() {
            shard.lock().counters.add_to(&mut stats);
        }
        // The shards are read in turn: a timer that left a shard already read and one that
        // came to a shard read later both count. Never more than `max_timers` are pending.
        stats.pending = self.capacity.at_most(stats.pending);
        let counts = self.executor.counts();
        stats.workers = counts.workers as u64;
        stats.workers_peak = counts.peak as u64;
        stats.workers_spawned = counts.spawned as u64;
        stats.workers_retired = counts.retired as u64;
        stats.queue_depth = counts.queued as u64;
        [stats.late_p50_us, stats.late_p99_us] = self.lateness.quantiles([0.50, 0.99]);
        stats.late_max_us = self.lateness.max();
        stats.callback_panics = self.panics.load(Relaxed);
        stats.slow_callbacks = self.slow_callbacks.load(Relaxed);
        stats.span_ms = self.clock.elapsed_ns() / 1_000_000;
        stats
    }

    /// The events of the last `window` (see `metrics.rs`).
    pub(crate) fn stats_recent(&self, window: Duration) -> Stats {
        let mut readings = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let now = Reading::new(
            self.clock.elapsed_ns(),
            self.stats(),
            &self.lateness.counts(),
        );
        readings.recent(now, window, self.lateness.max())
    }

    pub(crate) fn metrics(&self) -> Metrics {
        Metrics {
            stats: self.stats(),
            lateness: self.lateness.lateness(),
            slow_callback: self.config.slow_callback,
        }
    }

    /// Copies every exportable timer (see [`ShardState::export`](super::shard::ShardState)),
    /// in deadline order, then id order. The timers are those of one instant: every shard
    /// is locked, in shard order, `at` reads the clocks, and `copy` takes what the caller
    /// needs of each task; each shard is unlocked once copied (into memory prepared before
    /// the locks, so that no page fault lengthens them). Until the snapshot's guard drops,
    /// the tasks of timers that end wait to be dropped, so what the copies point into stays
    /// valid while the caller reads them outside the locks.
    pub(crate) fn export<A, S>(
        &self,
        at: impl FnOnce() -> A,
        mut copy: impl FnMut(&T) -> S,
    ) -> Snapshot<'_, A, T, S> {
        let mut timers = Vec::new();
        let held: usize = self.shards.iter().map(|shard| shard.lock().timers()).sum();
        prefault(&mut timers, held + held / 8);
        let states: Vec<_> = self.shards.iter().map(Shard::lock).collect();
        let guard = self.exports.begin(self.id(), &self.panics);
        let instant = at();
        let mut running = 0;
        for (index, state) in states.into_iter().enumerate() {
            running += state.export(|key, deadline, schedule, task| {
                timers.push((deadline, self.ids.encode(index, key), schedule, copy(task)));
            });
        }
        timers.sort_unstable_by_key(|&(deadline, id, _, _)| (deadline, id));
        Snapshot {
            at: instant,
            timers,
            running,
            exporting: guard,
        }
    }

    /// Whether the calling thread runs a callback of this runtime, at any depth.
    pub(crate) fn in_callback(&self) -> bool {
        running(|c| c.runtime == self.id())
    }

    /// Whether a shutdown that waits for the runtime's threads and holds would wait for the
    /// calling thread: inside one of its callbacks, on one of its threads at all, or while
    /// this thread holds it.
    pub(crate) fn would_wait_for_itself(&self) -> bool {
        self.in_callback()
            || self.executor.runs_here()
            || self.exporting_here()
            || holding_here(self.id())
    }

    /// Whether an export of this runtime runs on the calling thread (its function called
    /// back in).
    pub(crate) fn exporting_here(&self) -> bool {
        exporting_here(self.id())
    }

    /// Whether a shutdown began.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutting_down.load(Relaxed)
    }

    /// Marks the runtime as shutting down; false if it already was.
    pub(crate) fn begin_shutdown(&self) -> bool {
        !self.shutting_down.swap(true, Relaxed)
    }

    /// Closes every shard and drops what was pending, then the groups left without a
    /// timer; how many timers.
    pub(crate) fn discard_all(&self) -> usize {
        let mut discarded = 0;
        for shard in self.shards.iter() {
            let (tasks, groups) = shard.lock().close();
            discarded += tasks.len();
            self.capacity.give_back(tasks.len());
            for task in tasks {
                self.end_task(task);
            }
            let ended = shard.lock().end_groups(groups);
            ended
                .into_iter()
                .for_each(|data| self.drop_group(Some(data)));
        }
        self.wait_for_deferred_drops();
        discarded
    }
}

impl<T: Task> Lockable for RuntimeState<T> {
    /// The shards in order, then the executor's locks.
    fn lock_all(&self) -> Box<dyn Held + '_> {
        let shards: Vec<_> = self.shards.iter().map(Shard::lock).collect();
        let window = self.window.lock();
        Box::new((shards, self.executor.lock_all(), window))
    }
}

/// Reserves room for `len` more elements and writes every byte of it once, so that filling
/// it later (under locks) takes no page faults.
fn prefault<E>(vec: &mut Vec<E>, len: usize) {
    vec.reserve(len);
    let room = vec.spare_capacity_mut();
    room.fill_with(std::mem::MaybeUninit::zeroed);
}

fn saturate_i64(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_shard_and_the_thread_after_it_has_the_next() {
        let shard_of_a_new_thread = || {
            std::thread::spawn(|| {
                let shard = own_shard(4);
                assert_eq!(own_shard(4), shard, "the same at every add");
                (thread_hint(), shard)
            })
            .join()
            .unwrap()
        };
        let (first_hint, first) = shard_of_a_new_thread();
        let (second_hint, second) = shard_of_a_new_thread();
        assert!(second_hint > first_hint);
        if second_hint == first_hint + 1 {
            assert_eq!(second, (first + 1) % 4); // no other test's thread came between
        }
        assert_eq!(own_shard(1), 0);
    }

    #[test]
    fn due_timers_come_in_deadline_order_and_equal_ones_in_the_order_added() {
        let config = Config {
            manual: true,
            ..Config::default()
        };
        let rt = RuntimeState::<crate::BoxTask>::new(config, false);
        let deadlines = [(5, 0), (7, 0), (5, 0), (7, 300), (5, 0)];
        let added: Vec<(Deadline, TimerId)> = (0..3000)
            .map(|n| {
                let (tick, rounded_up_ns) = deadlines[n % deadlines.len()];
                let deadline = Deadline {
                    tick,
                    rounded_up_ns,
                };
                let added = rt.add(deadline, Schedule::Once, Box::new(|_| {}), |_| {});
                (deadline, added.ok().unwrap())
            })
            .collect();
        let mut expected = added.clone();
        expected.sort_by_key(|&(deadline, _)| deadline); // stable: equal ones as added
        assert!(rt.collect_due(10) == expected);
    }

    #[test]
    fn a_threads_timers_past_a_full_shard_go_to_the_next_ones_then_full() {
        let rt = RuntimeState::<crate::BoxTask>::with_shard_limit(Config::default(), false, 2);
        let shards = rt.shards.len();
        let own = own_shard(shards);
        let deadline = rt.deadline_at(SystemTime::now() + std::time::Duration::from_secs(60));
        let add = || rt.add(deadline, Schedule::Once, Box::new(|_| {}), |_| {});
        let shard_of = |id| rt.ids.decode(id).0;
        let added: Vec<usize> = (0..2 * shards)
            .map(|_| shard_of(add().ok().unwrap()))
            .collect();
        let expected: Vec<usize> = (0..2 * shards).map(|i| (own + i / 2) % shards).collect();
        assert_eq!(added, expected);
        assert_eq!(add().err().map(|r| r.error), Some(Error::Full));

        let rt = RuntimeState::<crate::BoxTask>::with_shard_limit(Config::default(), false, 2);
        let at = SystemTime::now() + std::time::Duration::from_secs(60);
        let timers = (0..2 * shards).map(|_| (at, Box::new(|_| {}) as crate::BoxTask));
        let ids = rt.add_many_at(timers).unwrap();
        let added: Vec<usize> = ids.into_iter().map(|id| rt.ids.decode(id).0).collect();
        assert_eq!(added, expected);
        let one_more = [(at, Box::new(|_| {}) as crate::BoxTask)];
        assert_eq!(rt.add_many_at(one_more).err(), Some(Error::Full));
        rt.discard_all();
    }

    /// A shutdown on another thread that drops the timer after a call found the runtime
    /// open: the call answers `Shutdown`, as every call after a shutdown began does, not
    /// `NotFound` ("no such pending timer").
    #[test]
    fn a_timer_a_shutdown_dropped_during_a_call_is_shutdown_not_not_found() {
        let rt = RuntimeState::<crate::BoxTask>::new(Config::default(), false);
        let deadline = rt.deadline_at(SystemTime::now() + std::time::Duration::from_secs(60));
        let add = || {
            rt.add(deadline, Schedule::Once, Box::new(|_| {}), |_| {})
                .ok()
                .unwrap()
        };
        let (a, b) = (add(), add());
        assert!(rt.begin_shutdown());
        rt.discard_all();
        assert_eq!(rt.cancel_open(a), Err(Error::Shutdown));
        assert_eq!(
            rt.reset_open(b, std::time::Duration::from_secs(1)),
            Err(Error::Shutdown)
        );
    }

    #[test]
    fn one_threads_groups_go_to_each_shard_in_turn() {
        let shards: Vec<_> = (0..8).map(|_| next_group_shard(4)).collect();
        for pair in shards.windows(2) {
            assert_eq!(pair[1], (pair[0] + 1) % 4, "{shards:?}");
        }
    }
}
