//! The C types of the ABI, whose layouts the header fixes, and their conversions from and
//! to the runtime's Rust types.

use std::ffi::{c_char, c_void};
use std::time::Duration;

use timerwheel_core::{Config, Error, GroupId, Missed, PeriodMode, Stats, TimerId};

use crate::time::{unix_ms, unix_time};

/// The id of a timer, unique to its wheel. 0 never names a timer.
///
/// Ids are generational: the id of a timer that has ended reaches a later timer in the
/// same slot only after that slot was reused 2^32 - 1 times. An id of another wheel is
/// TW_ERR_NOT_FOUND: each wheel writes its ids shifted by its creation number (mod 256), so
/// the ids of two wheels meet only when the wheels were created a multiple of 256 wheels
/// apart, or once a slot has been reused 2^24 - 1 (16.7 million) times in one of them.
pub type tw_timer_id = u64;

/// A timer's callback: runs with the timer's id and the `user_data` given at add.
pub type tw_callback = Option<unsafe extern "C" fn(id: tw_timer_id, user_data: *mut c_void)>;

/// Frees a timer's `user_data`: called exactly once per accepted timer, after its last
/// callback returned (after a one-shot fired, at delete, or at destroy). May be NULL.
/// After a run, it is called on the thread that ran the callback, before that thread
/// starts another callback; it may call every function a callback may, with the same
/// meanings (tw_destroy: TW_ERR_BUSY; tw_destroy_nowait works).
pub type tw_drop_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// The result of every call that can fail. TW_OK is 0; the errors are distinct.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tw_status {
    /// Success.
    TW_OK = 0,
    /// A NULL pointer or an out-of-range argument (zero period, bad config, unknown mode).
    TW_ERR_INVALID = 1,
    /// No pending timer has this id (fired one-shot, deleted, stale, or never existed).
    TW_ERR_NOT_FOUND = 2,
    /// The wheel holds max_timers pending timers already.
    TW_ERR_FULL = 3,
    /// The wheel is shutting down.
    TW_ERR_SHUTDOWN = 4,
    /// The call would wait for the calling callback itself, or targets the shared wheel.
    TW_ERR_BUSY = 5,
    /// A bug inside the library was caught at the boundary; nothing crashed.
    TW_ERR_INTERNAL = 6,
    /// The wheel was created before this process was forked from its parent, and its threads
    /// are not in this process: create a new wheel in the child (tw_default() gives the child
    /// a wheel of its own).
    TW_ERR_FORKED = 7,
    /// The caller's buffer is too small for what the call writes (tw_metrics_text): it
    /// says how many bytes it needs.
    TW_ERR_TOO_SMALL = 8,
    /// The group is closed: it takes no more timers (tw_group_close, tw_group_delete).
    TW_ERR_GROUP_CLOSED = 9,
    /// A durable timer of this (key, name) exists and TW_DURABLE_REPLACE was not given.
    TW_ERR_EXISTS = 10,
    /// No handler is registered under this name (tw_durable_add; tw_durable_open for a
    /// stored timer, whose store is left untouched).
    TW_ERR_NO_HANDLER = 11,
    /// The durable store refused or failed: tw_durable_error gives the message.
    TW_ERR_STORE = 12,
    /// PostgreSQL did not answer (a fleet node, docs/fleet.md): tw_fleet_join could not
    /// connect; a change (tw_fleet_add, _reset, _delete) was kept in the node's buffer and
    /// is written when it answers; tw_fleet_flush left changes in the buffer.
    /// tw_fleet_error says why.
    TW_ERR_UNREACHABLE = 13,
    /// Refused by a fence (a fleet node): the lease of the token's shard moved past its
    /// epoch (another node took it, or it expired), so nothing was written; the shard's
    /// new owner delivers the fire again.
    TW_ERR_FENCED = 14,
}

impl From<Error> for tw_status {
    fn from(error: Error) -> Self {
        match error {
            Error::Invalid => tw_status::TW_ERR_INVALID,
            Error::NotFound => tw_status::TW_ERR_NOT_FOUND,
            Error::Full => tw_status::TW_ERR_FULL,
            Error::Shutdown => tw_status::TW_ERR_SHUTDOWN,
            Error::Busy => tw_status::TW_ERR_BUSY,
            Error::Forked => tw_status::TW_ERR_FORKED,
            Error::GroupClosed => tw_status::TW_ERR_GROUP_CLOSED,
        }
    }
}

/// How a periodic timer schedules its next run.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tw_period_mode {
    /// Runs at delay, delay + period, delay + 2 period, ...; missed periods coalesce into one run.
    TW_FIXED_RATE = 0,
    /// Runs period after the previous callback returned.
    TW_FIXED_DELAY = 1,
}

/// What a periodic timer added with tw_add_periodic_at does with the points of its schedule
/// that passed before it was added (while the process was down).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tw_missed {
    /// One run now, for all of them together; then the schedule goes on at its next point.
    TW_MISSED_RUN_ONCE = 0,
    /// None: the first run is the schedule's next point.
    TW_MISSED_SKIP = 1,
}

/// What kind of timer an exported timer is (`tw_timer_info.kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tw_timer_kind {
    /// Added by tw_add: runs once.
    TW_TIMER_ONE_SHOT = 0,
    /// Added by tw_add_periodic, tw_add_periodic_ns or tw_add_periodic_at.
    TW_TIMER_PERIODIC = 1,
    /// Added by tw_add_at: runs once at a wall-clock time.
    TW_TIMER_WALL_CLOCK = 2,
}

/// How a wheel tells time (`tw_config.clock`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tw_clock {
    /// The real clock: CLOCK_MONOTONIC for delays, the system clock for tw_add_at.
    TW_CLOCK_MONOTONIC = 0,
    /// A virtual clock: it starts at `virtual_start_unix_ms` and moves only by tw_advance
    /// and tw_advance_to_next, which run the callbacks due on the calling thread. The wheel
    /// has no threads (as `manual`; `manual` set too changes nothing). Its range is 2^64 ns
    /// from the wheel's creation (see tw_advance).
    TW_CLOCK_VIRTUAL = 1,
}

/// A `tw_status` as C passes it in: any value of the underlying integer, so that an
/// unknown value is an error rather than undefined behaviour. The header names it
/// `tw_status` (same ABI as the C enum).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct RawStatus(pub u32);

/// A `tw_period_mode` as C passes it in (see [`RawStatus`]).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct RawPeriodMode(pub u32);

impl TryFrom<RawPeriodMode> for PeriodMode {
    type Error = tw_status;

    fn try_from(mode: RawPeriodMode) -> Result<Self, tw_status> {
        match mode.0 {
            m if m == tw_period_mode::TW_FIXED_RATE as u32 => Ok(PeriodMode::FixedRate),
            m if m == tw_period_mode::TW_FIXED_DELAY as u32 => Ok(PeriodMode::FixedDelay),
            _ => Err(tw_status::TW_ERR_INVALID),
        }
    }
}

/// A `tw_missed` as C passes it in (see [`RawStatus`]).
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct RawMissed(pub u32);

impl TryFrom<RawMissed> for Missed {
    type Error = tw_status;

    fn try_from(missed: RawMissed) -> Result<Self, tw_status> {
        match missed.0 {
            m if m == tw_missed::TW_MISSED_RUN_ONCE as u32 => Ok(Missed::RunOnce),
            m if m == tw_missed::TW_MISSED_SKIP as u32 => Ok(Missed::Skip),
            _ => Err(tw_status::TW_ERR_INVALID),
        }
    }
}

/// A timer id from its C form. 0 names no timer: `TW_ERR_NOT_FOUND`, like any unknown id.
pub fn timer_id(raw: tw_timer_id) -> Result<TimerId, tw_status> {
    TimerId::from_u64(raw).ok_or(tw_status::TW_ERR_NOT_FOUND)
}

/// What a call names by the id `raw`, read by `name` (a timer, a group). An id that names
/// nothing (0) is `name`'s error only while the wheel takes calls (`check_open`): during
/// destroy it is TW_ERR_SHUTDOWN, in a fork() child TW_ERR_FORKED, as for every other id.
pub fn named<I>(
    raw: u64,
    name: impl FnOnce(u64) -> Result<I, tw_status>,
    check_open: impl FnOnce() -> Result<(), Error>,
) -> Result<I, tw_status> {
    name(raw).map_err(|unnamed| check_open().map_or_else(tw_status::from, |()| unnamed))
}

/// The id of a group of timers, unique to its wheel. 0 never names a group. Generational
/// like a tw_timer_id: the id of a group that ended, or of another wheel's group, is
/// TW_ERR_NOT_FOUND; so is a timer id given as a group id, and the other way round.
pub type tw_group_id = u64;

/// The runtime's group id of a C one; 0 is TW_ERR_NOT_FOUND.
pub fn group_id(raw: tw_group_id) -> Result<GroupId, tw_status> {
    GroupId::from_u64(raw).ok_or(tw_status::TW_ERR_NOT_FOUND)
}

/// How a wheel is set up. Fill it with `tw_config_init`, then change what you need.
/// It can gain fields at its end in later versions (docs/c.md, "ABI policy").
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct tw_config {
    /// sizeof(tw_config) where the caller was compiled: tw_config_init sets it, tw_create
    /// reads that many bytes and takes the defaults for fields past them (and for a field
    /// the size ends inside: fields are read whole or not at all). 0 stands for the layout
    /// of 0.2.0 (a struct zeroed instead of filled by tw_config_init).
    pub size: usize,
    /// Granularity of the wheel in microseconds: default 1000, at least 100, at most 1000000.
    pub tick_us: u64,
    /// Worker threads kept even when idle: default 1, at most a nonzero max_workers.
    pub min_workers: u32,
    /// Most worker threads: default the number of CPUs, at most 1024; 0 runs callbacks on
    /// the tick thread.
    pub max_workers: u32,
    /// An idle worker retires after this many milliseconds (down to min_workers): default 1000.
    pub worker_keepalive_ms: u64,
    /// Most pending timers at once; 0 = unlimited (the default).
    pub max_timers: u64,
    /// Nonzero = no threads: the caller drives time with tw_poll and tw_next_timeout_ms.
    /// With TW_CLOCK_VIRTUAL it changes nothing (that wheel has no threads either way).
    pub manual: u32,
    /// A `tw_clock`: TW_CLOCK_MONOTONIC (0, the default) or TW_CLOCK_VIRTUAL (tw_create
    /// refuses anything else).
    pub clock: u32,
    /// A virtual clock's start on the wall clock, in ms since the Unix epoch: default 0.
    /// Ignored on the real clock.
    pub virtual_start_unix_ms: i64,
    /// A callback that runs at least this many microseconds is counted in
    /// tw_stats.slow_callbacks. 0 (the default) counts nothing and costs nothing; set, each
    /// callback costs one more reading of the clock.
    pub slow_callback_us: u64,
    /// The durable store's file (docs/durable.md): NULL (the default) = no store. Read by
    /// tw_create (the path is copied); opened by tw_durable_open.
    pub store_path: *const c_char,
    /// A `tw_durability`: TW_DURABLE_OFF (0, the default), TW_DURABLE_ASYNC or
    /// TW_DURABLE_SYNC; ASYNC and SYNC need store_path.
    pub durability: u32,
    /// Most events per commit of the store, at least 1: default 1000 (checked with or
    /// without a store).
    pub store_batch: u32,
    /// Async mode: the longest an event waits for its commit, in us: default 10000.
    pub store_delay_us: u64,
    /// A `tw_missed_points`: TW_MISSED_EACH (0, the default) or TW_MISSED_COALESCE;
    /// tw_create refuses anything else, with or without a store.
    pub missed_points: u32,
}

/// When a durable change is committed (tw_config.durability).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tw_durability {
    /// No store (the default).
    TW_DURABLE_OFF = 0,
    /// A change returns once queued; commits in batches (store_batch, store_delay_us).
    TW_DURABLE_ASYNC = 1,
    /// A change returns once the batch holding it is committed.
    TW_DURABLE_SYNC = 2,
}

/// What a periodic durable timer does with points missed while the process was down.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tw_missed_points {
    /// Every missed point is delivered, in order, each with its own token (the default).
    TW_MISSED_EACH = 0,
    /// One fire for the latest missed point.
    TW_MISSED_COALESCE = 1,
}

/// Names one fire of a durable timer; a fire delivered again has the same token.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tw_token {
    /// The application's key.
    pub key: u64,
    /// The handler's name (NUL-terminated; in a handler, valid during the call only).
    pub name: *const c_char,
    /// The scheduled deadline of this fire, ms since the Unix epoch.
    pub occurrence_unix_ms: i64,
    /// The incarnation of the timer's schedule: a replaced, re-added or reset timer has a
    /// new one.
    pub epoch: u64,
}

/// A durable timer's handler: the fire's token and the timer's payload (valid during the
/// call). Returns TW_ACK_NOW (1) to acknowledge the fire at once, TW_ACK_LATER (0) when the
/// application calls tw_durable_ack after storing the token with its effect.
pub type tw_handler = Option<
    unsafe extern "C" fn(
        token: *const tw_token,
        payload: *const c_void,
        len: usize,
        ctx: *mut c_void,
    ) -> i32,
>;

/// The counters of a wheel's durable store (tw_durable_get_stats). It can gain fields at its
/// end in later versions (docs/c.md, "ABI policy").
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tw_durable_stats {
    /// Set it to sizeof(tw_durable_stats) before tw_durable_get_stats (`tw_durable_stats s =
    /// {.size = sizeof s};`), or to 0 for the layout of 0.2.0: the library writes no more
    /// bytes than that, only whole fields, and stores here how many it wrote.
    pub size: usize,
    /// The last sequence number journalled (queued).
    pub last_seq: u64,
    /// The last sequence number committed: durable.
    pub durable_seq: u64,
    /// Events journalled and not committed yet (last_seq - durable_seq): what a crash now
    /// would lose.
    pub pending_events: u64,
    /// Commits that succeeded (a batch each).
    pub commits: u64,
    /// Commits that failed (each batch is retried with the next).
    pub failed_commits: u64,
    /// Fires acknowledged (by tw_durable_ack or a handler's TW_ACK_NOW).
    pub acks: u64,
    /// Fires delivered again after the open (unacknowledged before it).
    pub redelivered: u64,
    /// Durable timers now.
    pub timers: u64,
    /// Fires not acknowledged yet.
    pub unacked_fires: u64,
    /// The tw_status of the last durable call the store refused on this wheel (TW_OK if
    /// none); tw_durable_error gives its message. A call refused for its arguments alone
    /// (NULL, bad flags: TW_ERR_INVALID) is not recorded.
    pub last_error: i64,
}

impl From<&Config> for tw_config {
    fn from(config: &Config) -> Self {
        tw_config {
            size: size_of::<tw_config>(),
            tick_us: u64::try_from(config.tick.as_micros()).unwrap_or(u64::MAX),
            min_workers: u32::try_from(config.min_workers).unwrap_or(u32::MAX),
            max_workers: u32::try_from(config.max_workers).unwrap_or(u32::MAX),
            worker_keepalive_ms: u64::try_from(config.worker_keepalive.as_millis())
                .unwrap_or(u64::MAX),
            max_timers: u64::try_from(config.max_timers).unwrap_or(u64::MAX),
            manual: u32::from(config.manual),
            clock: match config.virtual_start {
                Some(_) => tw_clock::TW_CLOCK_VIRTUAL as u32,
                None => tw_clock::TW_CLOCK_MONOTONIC as u32,
            },
            virtual_start_unix_ms: config.virtual_start.map_or(0, unix_ms),
            slow_callback_us: config
                .slow_callback
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            store_path: std::ptr::null(),
            durability: tw_durability::TW_DURABLE_OFF as u32,
            store_batch: 1000,
            store_delay_us: 10_000,
            missed_points: tw_missed_points::TW_MISSED_EACH as u32,
        }
    }
}

impl TryFrom<&tw_config> for Config {
    type Error = tw_status;

    /// `TW_ERR_INVALID` for an unknown clock.
    fn try_from(config: &tw_config) -> Result<Self, tw_status> {
        let virtual_start = match config.clock {
            c if c == tw_clock::TW_CLOCK_MONOTONIC as u32 => None,
            c if c == tw_clock::TW_CLOCK_VIRTUAL as u32 => {
                Some(unix_time(config.virtual_start_unix_ms)?)
            }
            _ => return Err(tw_status::TW_ERR_INVALID),
        };
        Ok(Config {
            tick: Duration::from_micros(config.tick_us),
            min_workers: config.min_workers as usize,
            max_workers: config.max_workers as usize,
            worker_keepalive: Duration::from_millis(config.worker_keepalive_ms),
            max_timers: usize::try_from(config.max_timers).unwrap_or(usize::MAX),
            manual: config.manual != 0,
            virtual_start,
            slow_callback: (config.slow_callback_us != 0)
                .then(|| Duration::from_micros(config.slow_callback_us)),
        })
    }
}

/// A snapshot of a wheel's counters. At any quiet moment
/// added = fired_one_shot + cancelled + pending + discarded.
/// It can gain fields at its end in later versions (docs/c.md, "ABI policy").
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tw_stats {
    /// Set it to sizeof(tw_stats) before tw_get_stats (`tw_stats s = {.size = sizeof s};`),
    /// or to 0 for the layout of 0.2.0: the library writes no more bytes than that, only
    /// whole fields, and stores here how many it wrote.
    pub size: usize,
    /// Timers that will run (again) unless deleted.
    pub pending: u64,
    /// Timers ever accepted.
    pub added: u64,
    /// Callback runs started (one-shot and periodic).
    pub fired: u64,
    /// One-shot timers whose callback started.
    pub fired_one_shot: u64,
    /// Timers stopped by tw_delete / tw_delete_sync.
    pub cancelled: u64,
    /// Timers dropped unrun at destroy.
    pub discarded: u64,
    /// Worker threads now.
    pub workers: u64,
    /// Most worker threads at once.
    pub workers_peak: u64,
    /// Workers started because due callbacks backed up.
    pub workers_spawned: u64,
    /// Workers retired after worker_keepalive_ms idle.
    pub workers_retired: u64,
    /// Due callbacks waiting for a worker, counting those of timers deleted or reset since
    /// they were queued, which a worker takes without starting them.
    pub queue_depth: u64,
    /// Median lateness (callback start minus the exact time it was due, not its tick),
    /// microseconds.
    pub late_p50_us: u64,
    /// 99th percentile lateness, microseconds.
    pub late_p99_us: u64,
    /// Largest lateness seen, microseconds.
    pub late_max_us: u64,
    /// Callbacks that panicked (never a C callback; counted for the other interfaces).
    pub callback_panics: u64,
    /// Callbacks that ran for at least tw_config.slow_callback_us (0 while it is 0).
    pub slow_callbacks: u64,
    /// How long the counters cover, in milliseconds: since the wheel was created
    /// (tw_get_stats), or the span of a recent view (tw_get_stats_recent).
    pub span_ms: u64,
}

impl From<Stats> for tw_stats {
    fn from(s: Stats) -> Self {
        tw_stats {
            size: size_of::<tw_stats>(),
            pending: s.pending,
            added: s.added,
            fired: s.fired,
            fired_one_shot: s.fired_one_shot,
            cancelled: s.cancelled,
            discarded: s.discarded,
            workers: s.workers,
            workers_peak: s.workers_peak,
            workers_spawned: s.workers_spawned,
            workers_retired: s.workers_retired,
            queue_depth: s.queue_depth,
            late_p50_us: s.late_p50_us,
            late_p99_us: s.late_p99_us,
            late_max_us: s.late_max_us,
            callback_panics: s.callback_panics,
            slow_callbacks: s.slow_callbacks,
            span_ms: s.span_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of the struct `name` in the header generated for this build.
    fn header_fields(name: &str) -> Vec<&'static str> {
        let header = include_str!(concat!(env!("OUT_DIR"), "/timerwheel.h"));
        let body = header
            .split(&format!("typedef struct {name} {{"))
            .nth(1)
            .and_then(|rest| rest.split(&format!("}} {name};")).next())
            .expect("the header defines the struct");
        body.lines()
            .filter_map(|line| line.trim().strip_suffix(';'))
            .filter_map(|declaration| declaration.split_whitespace().last())
            .collect()
    }

    #[test]
    fn tw_stats_has_the_runtimes_counters_in_their_order() {
        let counters = Stats::default().fields().map(|(name, _)| name);
        assert_eq!(
            header_fields("tw_stats"),
            [&["size"][..], &counters].concat()
        );
    }
}
