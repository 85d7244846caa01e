//! Durable timers through C (docs/durable.md): handlers registered by name on a wheel whose
//! tw_config names a store, the store opened by tw_durable_open, and the calls on it.

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use timerwheel_core::durable::{
    Ack, Durable, DurableBuilder, DurableError, DurableTimer, Fired, MissedPoints, Mode,
    RuntimeRef, SqliteSink, Token,
};
use timerwheel_core::{BoxTask, Runtime, TimerId};

use crate::boundary::guard;
use crate::handle::{default_handle, tw_wheel};
use crate::handler::CHandler;
use crate::metrics::write_text;
use crate::ptr::Out;
use crate::task::CTask;
use crate::time::unix_time;
use crate::types::{
    tw_config, tw_durability, tw_durable_stats, tw_handler, tw_missed_points, tw_status,
    tw_timer_id, tw_token,
};

/// A handler's answer: acknowledge the fire now.
pub const TW_ACK_NOW: i32 = 1;
/// A handler's answer: the application acknowledges the token later.
pub const TW_ACK_LATER: i32 = 0;
/// tw_durable_add's flag: replace a timer of the same (key, name).
pub const TW_DURABLE_REPLACE: u32 = 1;

/// The store a wheel was created with (tw_config).
pub struct Settings {
    path: PathBuf,
    mode: Mode,
    missed: MissedPoints,
}

/// The store settings of `cfg`: `None` for durability off; for an unknown mode or policy, a
/// batch of 0 events, or a mode without a path, a message naming the field, its value and
/// what it may be (tw_config_check's; TW_ERR_INVALID). A field out of its range is refused
/// with durability off too, as every field of tw_config is.
///
/// # Safety
/// `cfg.store_path` is NULL or a NUL-terminated string.
pub unsafe fn settings(cfg: &tw_config) -> Result<Option<Settings>, String> {
    let batch = usize::try_from(cfg.store_batch).unwrap_or(usize::MAX);
    if batch == 0 {
        return Err("store_batch 0 is not valid: at least 1 event per commit".to_owned());
    }
    let missed = missed_points(u64::from(cfg.missed_points))?;
    let mode = match cfg.durability {
        d if d == tw_durability::TW_DURABLE_OFF as u32 => return Ok(None),
        d if d == tw_durability::TW_DURABLE_ASYNC as u32 => Mode::Async {
            batch,
            delay: Duration::from_micros(cfg.store_delay_us),
        },
        d if d == tw_durability::TW_DURABLE_SYNC as u32 => Mode::Sync { batch },
        d => {
            return Err(format!(
                "durability {d} is not valid: TW_DURABLE_OFF, TW_DURABLE_ASYNC or TW_DURABLE_SYNC"
            ))
        }
    };
    if cfg.store_path.is_null() {
        return Err("store_path NULL is not valid: a durable wheel names its store".to_owned());
    }
    // SAFETY: non-NULL, and NUL-terminated by this function's contract.
    let path = unsafe { CStr::from_ptr(cfg.store_path) };
    let path = path
        .to_str()
        .map_err(|_| "store_path is not valid: it is not UTF-8".to_owned())?;
    Ok(Some(Settings {
        path: PathBuf::from(path),
        mode,
        missed,
    }))
}

/// The policy a `tw_missed_points` names (tw_config's and tw_fleet_settings' field
/// `missed_points`); for any other value, a message naming the value and what it may be.
pub(crate) fn missed_points(raw: u64) -> Result<MissedPoints, String> {
    match raw {
        m if m == tw_missed_points::TW_MISSED_EACH as u64 => Ok(MissedPoints::Each),
        m if m == tw_missed_points::TW_MISSED_COALESCE as u64 => Ok(MissedPoints::Coalesce),
        m => Err(format!(
            "missed_points {m} is not valid: TW_MISSED_EACH or TW_MISSED_COALESCE"
        )),
    }
}

/// A wheel's durable store: the handlers until it is opened, then the open store.
pub struct DurableSlot {
    registering: Mutex<Option<(DurableBuilder, Settings)>>,
    open: OnceLock<Durable<CTask>>,
    last_error: Mutex<LastError>,
}

/// The last durable call that failed on a wheel: its status and message.
struct LastError {
    status: tw_status,
    message: String,
}

impl Default for LastError {
    fn default() -> Self {
        LastError {
            status: tw_status::TW_OK,
            message: String::new(),
        }
    }
}

impl DurableSlot {
    /// A slot for `settings` (none: the wheel has no store).
    pub fn new(settings: Option<Settings>) -> Self {
        DurableSlot {
            registering: Mutex::new(settings.map(|s| (DurableBuilder::default(), s))),
            open: OnceLock::new(),
            last_error: Mutex::default(),
        }
    }

    fn store(&self) -> Result<&Durable<CTask>, tw_status> {
        self.open.get().ok_or(tw_status::TW_ERR_INVALID)
    }

    /// Keeps `error`'s message for tw_durable_error and gives its status.
    fn fail(&self, error: DurableError) -> tw_status {
        let message = error.to_string();
        let status = match error {
            DurableError::Exists => tw_status::TW_ERR_EXISTS,
            DurableError::NotFound => tw_status::TW_ERR_NOT_FOUND,
            DurableError::NoHandler(_) => tw_status::TW_ERR_NO_HANDLER,
            DurableError::Store(_) => tw_status::TW_ERR_STORE,
            DurableError::Invalid(_) => tw_status::TW_ERR_INVALID,
            DurableError::Runtime(error) => error.into(),
        };
        *self.last_error() = LastError { status, message };
        status
    }

    fn last_error(&self) -> MutexGuard<'_, LastError> {
        self.last_error.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn result<R>(&self, result: Result<R, DurableError>) -> Result<R, tw_status> {
        result.map_err(|error| self.fail(error))
    }
}

/// The wheel's runtime as the store reaches it: the store lives in the same `tw_wheel`,
/// which drops the store before the runtime.
struct WheelRuntime(NonNull<Runtime<CTask>>);

// SAFETY: a `Runtime` is Send and Sync; the pointer is only read while the store that holds
// it lives, and the store is dropped before the runtime (tw_wheel's field order).
unsafe impl Send for WheelRuntime {}
// SAFETY: as for Send.
unsafe impl Sync for WheelRuntime {}

impl RuntimeRef<CTask> for WheelRuntime {
    fn get(&self) -> &Runtime<CTask> {
        // SAFETY: see the Send impl: the runtime outlives the store that holds this.
        unsafe { self.0.as_ref() }
    }
}

impl From<BoxTask> for CTask {
    /// A C task that runs a Rust closure (a durable timer's dispatch).
    fn from(task: BoxTask) -> Self {
        let data = Box::into_raw(Box::new(task)).cast::<c_void>();
        CTask::new(Some(run_boxed), data, Some(drop_boxed)).expect("the callback is not NULL")
    }
}

unsafe extern "C" fn run_boxed(id: tw_timer_id, data: *mut c_void) {
    // SAFETY: `data` is the BoxTask that `From<BoxTask>` leaked for this task, and the
    // runtime never runs a task concurrently with itself or after its drop.
    let task = unsafe { &mut *data.cast::<BoxTask>() };
    if let Some(id) = TimerId::from_u64(id) {
        // A panic must not unwind into C: the dispatch is the library's own code.
        let _ = catch_unwind(AssertUnwindSafe(|| task(id)));
    }
}

unsafe extern "C" fn drop_boxed(data: *mut c_void) {
    // SAFETY: called once per task, with the pointer `From<BoxTask>` leaked.
    drop(unsafe { Box::from_raw(data.cast::<BoxTask>()) });
}

/// The C token of a fire, handed to `handler` with its payload.
fn call_handler(handler: &CHandler<tw_token>, fired: &Fired<'_>) -> Ack {
    let name = CString::new(fired.token.name.as_str()).unwrap_or_default();
    let token = tw_token {
        key: fired.token.key,
        name: name.as_ptr(),
        occurrence_unix_ms: fired.token.occurrence_ms,
        epoch: fired.token.epoch,
    };
    handler.call(&token, fired.payload)
}

/// The wheel behind `w`; `TW_ERR_INVALID` for NULL and for the shared wheel (no store),
/// `TW_ERR_FORKED` in a fork() child for a wheel of the parent (its store's writer thread
/// is the parent's).
///
/// # Safety
/// `w` is NULL, tw_default(), or a live wheel.
unsafe fn wheel<'a>(w: *const tw_wheel) -> Result<&'a tw_wheel, tw_status> {
    if w == default_handle().cast_const() {
        return Err(tw_status::TW_ERR_INVALID);
    }
    // SAFETY: by this function's contract.
    let wheel = unsafe { w.as_ref() }.ok_or(tw_status::TW_ERR_INVALID)?;
    if wheel.runtime().forked() {
        return Err(tw_status::TW_ERR_FORKED);
    }
    Ok(wheel)
}

/// A name from C: non-NULL, UTF-8, not empty.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub(crate) unsafe fn name<'a>(name: *const c_char) -> Result<&'a str, tw_status> {
    if name.is_null() {
        return Err(tw_status::TW_ERR_INVALID);
    }
    // SAFETY: non-NULL and NUL-terminated by this function's contract.
    let name = unsafe { CStr::from_ptr(name) }.to_str();
    name.ok()
        .filter(|n| !n.is_empty())
        .ok_or(tw_status::TW_ERR_INVALID)
}

/// Registers `handler` (with `ctx`) for the durable timers named `name`, before
/// tw_durable_open. Returns TW_OK, or TW_ERR_INVALID (`w`, `name` or `handler` NULL, a name
/// empty or not UTF-8, a wheel without store_path, the name registered already), or
/// TW_ERR_BUSY after tw_durable_open.
///
/// # Safety
/// `w` is NULL or a live wheel; `name` NULL or NUL-terminated. `handler(token, payload,
/// len, ctx)` may run on any of the wheel's threads, several at once.
#[no_mangle]
pub unsafe extern "C" fn tw_handler_register(
    w: *mut tw_wheel,
    name: *const c_char,
    handler: tw_handler,
    ctx: *mut c_void,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?;
        let f = handler.ok_or(tw_status::TW_ERR_INVALID)?;
        if slot.open.get().is_some() {
            return Err(tw_status::TW_ERR_BUSY);
        }
        let mut registering = slot.registering.lock().unwrap_or_else(|p| p.into_inner());
        let (builder, _) = registering.as_mut().ok_or(tw_status::TW_ERR_INVALID)?;
        let handler = CHandler { f, ctx };
        if builder.register(
            name,
            Arc::new(move |fired: &Fired<'_>| call_handler(&handler, fired)),
        ) {
            Ok(())
        } else {
            Err(tw_status::TW_ERR_INVALID)
        }
    })
}

/// Opens the store named by tw_config.store_path: restores every stored timer and delivers
/// every unacknowledged fire again, then journals. Handlers and callbacks may run before it
/// returns. Returns TW_OK, or TW_ERR_INVALID (`w` NULL, no store_path), TW_ERR_BUSY (opened
/// already), TW_ERR_NO_HANDLER (a stored timer's handler is not registered; the store is
/// untouched), TW_ERR_STORE (tw_durable_error says why: locked by another opener, not a
/// store, damaged, another schema version, cannot write), TW_ERR_SHUTDOWN (a callback or
/// handler destroyed the wheel while it opened: `w` is freed once this returns; the store
/// keeps every timer). After a refusal other than TW_ERR_SHUTDOWN it can be called again.
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_open(w: *mut tw_wheel) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let wheel = unsafe { self::wheel(w) }?;
        // A callback run meanwhile may destroy the wheel without waiting: the hold keeps it
        // until the open is done with it, and `w` is freed when the hold ends.
        let hold = wheel.runtime().hold();
        let opened = open_store(wheel).and_then(|()| Ok(hold.check_open()?));
        drop(hold);
        opened
    })
}

/// tw_durable_open's work, on a wheel held.
fn open_store(wheel: &tw_wheel) -> Result<(), tw_status> {
    let slot = wheel.durable();
    let mut registering = slot.registering.lock().unwrap_or_else(|p| p.into_inner());
    if slot.open.get().is_some() {
        return Err(tw_status::TW_ERR_BUSY);
    }
    let (builder, settings) = registering.as_ref().ok_or(tw_status::TW_ERR_INVALID)?;
    let runtime = WheelRuntime(NonNull::from(wheel.runtime()));
    let sink = slot.result(SqliteSink::open(&settings.path).map_err(DurableError::Store))?;
    let opened = builder
        .clone()
        .mode(settings.mode)
        .missed(settings.missed)
        .open_unrestored(Box::new(runtime), Box::new(sink));
    let (store, restoring) = slot.result(opened)?;
    // Published before anything is scheduled: handlers of restored timers and redelivered
    // fires may call the store as soon as they run.
    let _ = slot.open.set(store);
    *registering = None;
    drop(registering);
    slot.result(restoring.finish())
}

/// Adds the durable timer (key, name) with a copy of `payload` (`len` bytes; NULL with 0),
/// first due at `first_unix_ms` on the wheel's wall clock, then every `period_ms` (0 = once).
/// `flags`: TW_DURABLE_REPLACE replaces a timer of the same (key, name). Returns TW_OK
/// (in sync mode once committed), or TW_ERR_INVALID (NULL arguments, unknown flags, the
/// store not open), TW_ERR_NO_HANDLER, TW_ERR_EXISTS, TW_ERR_STORE (tw_durable_error says
/// why: an earlier commit failed, and this change was not made; or, in sync mode, the
/// commit holding this change failed: the change is made and kept for the next commit, and
/// is durable once tw_durable_flush returns TW_OK), or the wheel's own errors.
///
/// # Safety
/// `w` is NULL or a live wheel; `name` NULL or NUL-terminated; `payload` valid for `len`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_add(
    w: *mut tw_wheel,
    key: u64,
    name: *const c_char,
    payload: *const c_void,
    len: usize,
    first_unix_ms: i64,
    period_ms: u64,
    flags: u32,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?;
        if flags & !TW_DURABLE_REPLACE != 0 {
            return Err(tw_status::TW_ERR_INVALID);
        }
        // SAFETY: valid for `len` bytes by this function's contract.
        let payload = unsafe { bytes(payload, len) }?;
        let timer = DurableTimer {
            key,
            name,
            payload,
            first: unix_time(first_unix_ms)?,
            period: (period_ms > 0).then(|| Duration::from_millis(period_ms)),
            replace: flags & TW_DURABLE_REPLACE != 0,
        };
        let store = slot.store()?;
        slot.result(store.add(&timer))
    })
}

/// An array from C: `n` items at `items`, which may be NULL only with 0; `TW_ERR_INVALID`
/// for NULL with more.
///
/// # Safety
/// `items` is NULL or valid for `n` items during `'a`.
pub(crate) unsafe fn slice<'a, T>(items: *const T, n: usize) -> Result<&'a [T], tw_status> {
    if n == 0 {
        return Ok(&[]);
    }
    if items.is_null() {
        return Err(tw_status::TW_ERR_INVALID);
    }
    // SAFETY: non-NULL and valid for `n` items by this function's contract.
    Ok(unsafe { std::slice::from_raw_parts(items, n) })
}

/// A payload from C: `len` bytes at `payload` (NULL only with 0).
///
/// # Safety
/// `payload` is NULL or valid for `len` bytes during `'a`.
pub(crate) unsafe fn bytes<'a>(payload: *const c_void, len: usize) -> Result<&'a [u8], tw_status> {
    // SAFETY: by this function's contract.
    unsafe { slice(payload.cast(), len) }
}

/// Moves the next deadline of the durable timer (key, name) to `unix_ms`. Returns TW_OK, or
/// TW_ERR_NOT_FOUND (no such timer), or as tw_durable_add.
///
/// # Safety
/// As for tw_durable_add.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_reset(
    w: *mut tw_wheel,
    key: u64,
    name: *const c_char,
    unix_ms: i64,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?;
        let store = slot.store()?;
        slot.result(store.reset(key, name, unix_time(unix_ms)?))
    })
}

/// Removes the durable timer (key, name); its unacknowledged fires stay until acknowledged.
/// Returns TW_OK, or TW_ERR_NOT_FOUND, or as tw_durable_add.
///
/// # Safety
/// As for tw_durable_add.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_delete(
    w: *mut tw_wheel,
    key: u64,
    name: *const c_char,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?;
        let store = slot.store()?;
        slot.result(store.delete(key, name))
    })
}

/// Acknowledges `n` tokens (one journal entry each, committed together); `*acked` (unless
/// NULL) counts those that matched an unacknowledged fire. Returns TW_OK, or TW_ERR_INVALID
/// (`tokens` NULL with `n` > 0, a token's name NULL, empty or not UTF-8), TW_ERR_STORE (as
/// for tw_durable_add). In sync mode TW_OK means every acknowledgement made so far is
/// committed, even when none of these tokens matched.
///
/// # Safety
/// `w` is NULL or a live wheel; `tokens` valid for `n` tokens whose names are
/// NUL-terminated; `acked` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_ack(
    w: *mut tw_wheel,
    tokens: *const tw_token,
    n: usize,
    acked: *mut usize,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        // SAFETY: the caller passes NULL or a writable size_t; NULL asks for no count.
        let acked = unsafe { Out::new(acked) }.ok();
        // SAFETY: NULL or valid for `n` tokens by this function's contract.
        let raw = unsafe { slice(tokens, n) }?;
        let mut owned = Vec::with_capacity(n);
        for token in raw {
            owned.push(Token {
                key: token.key,
                // SAFETY: NULL or NUL-terminated by this function's contract.
                name: unsafe { name(token.name) }?.to_owned(),
                occurrence_ms: token.occurrence_unix_ms,
                epoch: token.epoch,
            });
        }
        let store = slot.store()?;
        let count = slot.result(store.ack(&owned))?;
        if let Some(acked) = acked {
            acked.put(count);
        }
        Ok(())
    })
}

/// Commits everything queued; `*durable_seq` (unless NULL) receives the sequence number
/// that is durable (also when a commit failed). Returns TW_OK, or TW_ERR_STORE (a commit
/// failed, reported once; tw_durable_error says why), TW_ERR_INVALID.
///
/// # Safety
/// `w` is NULL or a live wheel; `durable_seq` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_flush(w: *mut tw_wheel, durable_seq: *mut u64) -> tw_status {
    // SAFETY: this function's contract is flush_with's.
    unsafe { flush_with(w, durable_seq, Durable::flush) }
}

/// A flush of the wheel's store by `flush`, its durable sequence put in `*durable_seq`.
///
/// # Safety
/// `w` is NULL or a live wheel; `durable_seq` NULL or writable.
unsafe fn flush_with(
    w: *mut tw_wheel,
    durable_seq: *mut u64,
    flush: impl FnOnce(&Durable<CTask>) -> Result<u64, DurableError>,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        // SAFETY: the caller passes NULL or a writable uint64_t.
        let out = unsafe { Out::new(durable_seq) }.ok();
        let store = slot.store()?;
        let flushed = flush(store);
        let durable = match &flushed {
            Ok(seq) => Some(*seq),
            // What a crash now would keep (docs/durable.md).
            Err(DurableError::Store(_)) => store.stats().ok().map(|stats| stats.durable_seq),
            Err(_) => None,
        };
        if let (Some(out), Some(durable)) = (out, durable) {
            out.put(durable);
        }
        slot.result(flushed).map(drop)
    })
}

/// Commits the changes up to the sequence `seq` (a change's sequence is at most the
/// `last_seq` of tw_durable_get_stats read once it returned) without waiting for the
/// changes made after it; `*durable_seq` (unless NULL) receives the sequence number that
/// is durable (`seq` or more). Returns TW_OK, or TW_ERR_STORE (a commit failed, reported
/// once; tw_durable_error says why), TW_ERR_INVALID (also a `seq` not handed out yet:
/// nothing waited).
///
/// # Safety
/// `w` is NULL or a live wheel; `durable_seq` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_flush_to(
    w: *mut tw_wheel,
    seq: u64,
    durable_seq: *mut u64,
) -> tw_status {
    // SAFETY: this function's contract is flush_with's.
    unsafe { flush_with(w, durable_seq, |store| store.flush_to(seq)) }
}

/// The message of the wheel's last durable error (empty if none), as tw_metrics_text
/// writes its text: TW_ERR_TOO_SMALL when `len` is short, `*needed` the size.
///
/// # Safety
/// `w` is NULL or a live wheel; `buf` NULL or valid for `len` bytes; `needed` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_error(
    w: *const tw_wheel,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        let message = slot.last_error().message.clone();
        // SAFETY: this function's contract on `buf`, `len` and `needed`.
        unsafe { write_text(&message, buf, len, needed) }
    })
}

/// Copies the counters of the wheel's durable store into `*out`, no more than `out->size`
/// bytes (0: the layout of 0.2.0), and stores in `out->size` how many bytes it wrote, as
/// tw_get_stats does. Set the size first: `tw_durable_stats s = {.size = sizeof s};`.
///
/// Returns TW_OK, or TW_ERR_INVALID (`w` or `out` NULL, `out->size` from 1 to
/// sizeof(size_t) - 1, the store not open), TW_ERR_FORKED.
///
/// # Safety
/// `w` is NULL or a live wheel; `out` is NULL or points to a `tw_durable_stats` whose size
/// field is readable and which is writable for as many bytes as it says.
#[no_mangle]
pub unsafe extern "C" fn tw_durable_get_stats(
    w: *const tw_wheel,
    out: *mut tw_durable_stats,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable tw_durable_stats.
        let out = unsafe { Out::new(out) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let slot = unsafe { wheel(w) }?.durable();
        let stats = slot.result(slot.store()?.stats())?;
        out.put_sized(tw_durable_stats {
            size: size_of::<tw_durable_stats>(),
            last_seq: stats.last_seq,
            durable_seq: stats.durable_seq,
            pending_events: stats.pending_events(),
            commits: stats.commits,
            failed_commits: stats.sink_failures,
            acks: stats.acks,
            redelivered: stats.redelivered,
            timers: stats.timers,
            unacked_fires: stats.unacked_fires,
            last_error: slot.last_error().status as i64,
        })
    })
}
