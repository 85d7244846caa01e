//! A node of a fleet on PostgreSQL through C (docs/fleet.md): created with its settings,
//! handlers registered by name, then joined with a connection string and a node name, as a
//! durable wheel registers its handlers before tw_durable_open. The calls mirror the
//! tw_durable_* ones; the node is a `timerwheel_fleet::Runner`.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::mem::offset_of;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};
use std::time::Duration;

use timerwheel_core::durable::{Ack, MissedPoints};
use timerwheel_fleet::{
    Change, ConnectOptions, Fire, FleetError, FleetToken, NewTimer, Outcome, Runner, RunnerBuilder,
    Settings, Status,
};

use crate::boundary::{guard, guard_or};
use crate::durable::{bytes, missed_points, name, slice, TW_DURABLE_REPLACE};
use crate::handler::CHandler;
use crate::metrics::write_text;
use crate::ptr::Out;
use crate::sized::{read_sized, SizedStruct};
use crate::types::{tw_missed_points, tw_status};

/// How a fleet node runs (tw_fleet_create). Fill it with tw_fleet_settings_init, then change
/// what you need. It can gain fields at its end in later versions (docs/c.md, "ABI policy").
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct tw_fleet_settings {
    /// sizeof(tw_fleet_settings) where the caller was compiled (tw_fleet_settings_init sets
    /// it); fields past it take their defaults. 0 stands for the first layout (up to
    /// `buffer`).
    pub size: usize,
    /// The lease TTL in ms, renewed every fifth of it: default 10000, at least 100. A node
    /// cut off from PostgreSQL stops firing this long after its last renewal.
    pub ttl_ms: u64,
    /// How far ahead the node loads its shards' timers, in ms: default 60000, at least
    /// half the TTL.
    pub window_ms: u64,
    /// The longest wait between two claims of due timers, in ms: default 500, at least 1.
    pub poll_ms: u64,
    /// Timers claimed per transaction: default 500, at least 1.
    pub batch: u64,
    /// Nonzero (the default): adds and resets from other nodes wake this one at once
    /// (LISTEN/NOTIFY); 0: they wait for the poll.
    pub listen: u64,
    /// Most changes kept while PostgreSQL does not answer: default 10000; past it a change
    /// is refused with TW_ERR_FULL.
    pub buffer: u64,
    /// A `tw_missed_points`, for the points of periodic timers that fell due while no node
    /// held their shard (docs/contract.md, "Fleet store"): TW_MISSED_EACH (0, the default)
    /// or TW_MISSED_COALESCE; tw_fleet_create refuses anything else. 64 bits wide as every
    /// field here: the struct has no padding, where a later field could hide.
    pub missed_points: u64,
}

// SAFETY: tw_fleet_settings is repr(C), starts with `size: usize`, and has only integer
// fields.
unsafe impl SizedStruct for tw_fleet_settings {
    /// Its first layout ends with `buffer`.
    const FIRST_SIZE: usize = offset_of!(tw_fleet_settings, buffer) + size_of::<u64>();
    // After the size, every field is a u64.
    const FIELD_ENDS: &'static [usize] = &crate::sized::eight_byte_field_ends::<
        tw_fleet_settings,
        { size_of::<tw_fleet_settings>() / size_of::<u64>() },
    >();

    fn set_size(&mut self, size: usize) {
        self.size = size;
    }
}

impl From<&Settings> for tw_fleet_settings {
    fn from(s: &Settings) -> Self {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        tw_fleet_settings {
            size: size_of::<tw_fleet_settings>(),
            ttl_ms: ms(s.ttl),
            window_ms: ms(s.window),
            poll_ms: ms(s.poll),
            batch: u64::try_from(s.batch).unwrap_or(0),
            listen: u64::from(s.listen),
            buffer: u64::try_from(s.buffer).unwrap_or(u64::MAX),
            missed_points: match s.missed {
                MissedPoints::Each => tw_missed_points::TW_MISSED_EACH as u64,
                MissedPoints::Coalesce => tw_missed_points::TW_MISSED_COALESCE as u64,
            },
        }
    }
}

impl TryFrom<&tw_fleet_settings> for Settings {
    type Error = tw_status;

    /// `TW_ERR_INVALID` for an unknown `missed_points`; the node checks the ranges when it
    /// joins (TW_ERR_INVALID there).
    fn try_from(s: &tw_fleet_settings) -> Result<Self, tw_status> {
        Ok(Settings {
            ttl: Duration::from_millis(s.ttl_ms),
            window: Duration::from_millis(s.window_ms),
            poll: Duration::from_millis(s.poll_ms),
            batch: i64::try_from(s.batch).unwrap_or(i64::MAX),
            listen: s.listen != 0,
            buffer: usize::try_from(s.buffer).unwrap_or(usize::MAX),
            missed: missed_points(s.missed_points).map_err(|_| tw_status::TW_ERR_INVALID)?,
            ..Settings::default()
        })
    }
}

/// Names one fire of a fleet timer; a fire delivered again has the same key, name,
/// occurrence and version (under the epoch of the node that delivers it).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tw_fleet_token {
    /// The application's key (its hash picks the shard).
    pub key: u64,
    /// The handler's name (NUL-terminated; in a handler, valid during the call only).
    pub name: *const c_char,
    /// The scheduled deadline of this fire, ms since the Unix epoch.
    pub occurrence_unix_ms: i64,
    /// The timer's incarnation: a replaced or re-added timer has a new one.
    pub version: i64,
    /// The key's shard.
    pub shard: i32,
    /// The shard's epoch when the fire was delivered: tw_fleet_ack refuses it
    /// (TW_ERR_FENCED) once the lease moved on.
    pub epoch: i64,
}

/// A fleet timer's handler: the fire's token and the timer's payload (valid during the
/// call). Returns TW_ACK_NOW (1) to acknowledge the fire at once, TW_ACK_LATER (0) when the
/// application calls tw_fleet_ack after storing the token with its effect.
pub type tw_fleet_handler = Option<
    unsafe extern "C" fn(
        token: *const tw_fleet_token,
        payload: *const c_void,
        len: usize,
        ctx: *mut c_void,
    ) -> i32,
>;

/// A node of a fleet on PostgreSQL (docs/fleet.md): its settings and handlers, then the
/// running node. Opaque; create it with tw_fleet_create and free it with tw_fleet_destroy.
/// The tw_fleet_* calls are in a library built with the cargo feature `fleet` (the default;
/// docs/c.md).
pub struct tw_fleet {
    /// The handlers and settings until tw_fleet_join, then `None`.
    registering: Mutex<Option<RunnerBuilder>>,
    /// The node from tw_fleet_join to tw_fleet_leave.
    runner: RwLock<Option<Runner>>,
    /// The message of the last call that failed on it.
    last_error: Mutex<String>,
}

thread_local! {
    /// Set while a handler runs on this thread: tw_fleet_leave and tw_fleet_destroy would
    /// wait for the handler itself.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// The C token of a fire, handed to `handler` with its payload; marks the thread as in a
/// handler meanwhile.
fn call_handler(handler: &CHandler<tw_fleet_token>, fire: &Fire) -> Ack {
    let name = CString::new(fire.token.name.as_str()).unwrap_or_default();
    let token = tw_fleet_token {
        key: fire.token.key,
        name: name.as_ptr(),
        occurrence_unix_ms: fire.token.occurrence_ms,
        version: fire.token.version,
        shard: fire.token.shard,
        epoch: fire.token.shard_epoch,
    };
    IN_HANDLER.with(|h| h.set(true));
    let ack = handler.call(&token, &fire.payload);
    IN_HANDLER.with(|h| h.set(false));
    ack
}

impl tw_fleet {
    fn last_error(&self) -> MutexGuard<'_, String> {
        self.last_error.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `error`'s message for tw_fleet_error (never the connection string: the fleet
    /// crate's errors carry none) and gives its status.
    fn fail(&self, error: FleetError) -> tw_status {
        let status = match &error {
            FleetError::Invalid(_) => tw_status::TW_ERR_INVALID,
            FleetError::Exists { .. } => tw_status::TW_ERR_EXISTS,
            FleetError::Fenced { .. } => tw_status::TW_ERR_FENCED,
            FleetError::Connect(_) | FleetError::Unreachable { .. } => {
                tw_status::TW_ERR_UNREACHABLE
            }
            FleetError::BufferFull { .. } => tw_status::TW_ERR_FULL,
            FleetError::NoSchema
            | FleetError::SchemaVersion { .. }
            | FleetError::Database(_)
            | FleetError::ShardCount { .. } => tw_status::TW_ERR_STORE,
        };
        *self.last_error() = error.to_string();
        status
    }

    /// Refuses with `status` and keeps `message` for tw_fleet_error.
    fn refuse(&self, status: tw_status, message: String) -> tw_status {
        *self.last_error() = message;
        status
    }

    fn result<R>(&self, result: Result<R, FleetError>) -> Result<R, tw_status> {
        result.map_err(|error| self.fail(error))
    }

    /// Runs `call` on the joined node: TW_ERR_INVALID before tw_fleet_join, TW_ERR_SHUTDOWN
    /// after tw_fleet_leave.
    fn with_runner<R>(
        &self,
        call: impl FnOnce(&Runner) -> Result<R, FleetError>,
    ) -> Result<R, tw_status> {
        if let Some(runner) = self.runner().as_ref() {
            return self.result(call(runner));
        }
        // Not joined, joining, or left. A join holds the registering lock until the node is
        // published, and its handlers may call the node meanwhile (a take-over): they wait
        // for it here (the lock first, as tw_fleet_join takes them), then find the node.
        let registering = self.joining();
        if let Some(runner) = self.runner().as_ref() {
            return self.result(call(runner));
        }
        if registering.is_some() {
            return Err(self.refuse(
                tw_status::TW_ERR_INVALID,
                "the node has not joined (tw_fleet_join)".to_owned(),
            ));
        }
        Err(self.refuse(
            tw_status::TW_ERR_SHUTDOWN,
            "the node left the fleet (tw_fleet_leave)".to_owned(),
        ))
    }

    fn runner(&self) -> RwLockReadGuard<'_, Option<Runner>> {
        self.runner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn joining(&self) -> MutexGuard<'_, Option<RunnerBuilder>> {
        self.registering.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A change through the node: TW_OK once written, TW_ERR_UNREACHABLE once buffered;
    /// TW_ERR_NOT_FOUND for a reset or delete of no timer.
    fn change(&self, change: Change) -> Result<(), tw_status> {
        let (key, name) = match &change {
            Change::Add { key, name, .. }
            | Change::Reset { key, name, .. }
            | Change::Delete { key, name } => (*key, name.clone()),
        };
        match self.with_runner(|runner| runner.change(change))? {
            Status::Written(Outcome::Added { .. }) => Ok(()),
            Status::Written(Outcome::Reset { found } | Outcome::Deleted { found }) => match found {
                true => Ok(()),
                false => Err(self.refuse(
                    tw_status::TW_ERR_NOT_FOUND,
                    format!("no timer ({key}, {name:?})"),
                )),
            },
            Status::Buffered { pending, cause } => Err(self.refuse(
                tw_status::TW_ERR_UNREACHABLE,
                format!("PostgreSQL unreachable ({cause}): {pending} changes wait in the buffer"),
            )),
        }
    }
}

/// The node behind `f`: `TW_ERR_INVALID` for NULL.
///
/// # Safety
/// `f` is NULL or a live node from tw_fleet_create.
unsafe fn fleet<'a>(f: *const tw_fleet) -> Result<&'a tw_fleet, tw_status> {
    // SAFETY: by this function's contract.
    unsafe { f.as_ref() }.ok_or(tw_status::TW_ERR_INVALID)
}

/// A C string argument that is not a name (a connection string): non-NULL, UTF-8.
///
/// # Safety
/// `text` is NULL or NUL-terminated.
unsafe fn text<'a>(text: *const c_char) -> Result<&'a str, tw_status> {
    // SAFETY: by this function's contract.
    let text = NonNull::new(text.cast_mut()).map(|t| unsafe { CStr::from_ptr(t.as_ptr()) });
    text.and_then(|t| t.to_str().ok())
        .ok_or(tw_status::TW_ERR_INVALID)
}

/// Fills `*settings` with the defaults: ttl_ms 10000, window_ms 60000, poll_ms 500, batch
/// 500, listen 1, buffer 10000, missed_points TW_MISSED_EACH; and size =
/// sizeof(tw_fleet_settings).
///
/// Bad input: `settings` NULL does nothing.
///
/// # Safety
/// `settings` is NULL or valid for writing a `tw_fleet_settings` of this version.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_settings_init(settings: *mut tw_fleet_settings) {
    guard_or((), || {
        // SAFETY: the caller passes NULL or a writable tw_fleet_settings.
        if let Ok(out) = unsafe { Out::new(settings) } {
            out.put(tw_fleet_settings::from(&Settings::default()));
        }
    })
}

/// Creates a fleet node with `settings` (NULL: the defaults), not joined yet: register its
/// handlers (tw_fleet_handler_register), then tw_fleet_join. `*out` receives it. Returns
/// TW_OK, or TW_ERR_INVALID (`out` NULL, `settings` of a bad size or with bytes past this
/// library's struct that are not zero, an unknown `missed_points`: nothing created). Ranges
/// are checked by tw_fleet_join.
///
/// # Safety
/// `settings` is NULL or readable for as many bytes as its size says; `out` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_create(
    settings: *const tw_fleet_settings,
    out: *mut *mut tw_fleet,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable pointer.
        let out = unsafe { Out::new(out) }?;
        let defaults = tw_fleet_settings::from(&Settings::default());
        let settings = match NonNull::new(settings.cast_mut()) {
            // SAFETY: readable for as many bytes as its size says (this function's contract).
            Some(settings) => unsafe { read_sized(settings, defaults) }?,
            None => defaults,
        };
        let settings = Settings::try_from(&settings)?;
        let node = tw_fleet {
            registering: Mutex::new(Some(Runner::builder().settings(settings))),
            runner: RwLock::new(None),
            last_error: Mutex::default(),
        };
        out.put(Box::into_raw(Box::new(node)));
        Ok(())
    })
}

/// Registers `handler` (with `ctx`) for the fleet timers named `name`, before
/// tw_fleet_join. Returns TW_OK, or TW_ERR_INVALID (`f`, `name` or `handler` NULL, a name
/// empty or not UTF-8, the name registered already), or TW_ERR_BUSY after tw_fleet_join.
///
/// # Safety
/// `f` is NULL or a live node; `name` NULL or NUL-terminated. `handler(token, payload, len,
/// ctx)` runs on the node's threads (its firer; at a take-over of a shard, its driver: two
/// at once at most), never on the thread that called tw_fleet_join. It may call every
/// tw_fleet_* function of its node but tw_fleet_leave and tw_fleet_destroy (TW_ERR_BUSY).
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_handler_register(
    f: *mut tw_fleet,
    name: *const c_char,
    handler: tw_fleet_handler,
    ctx: *mut c_void,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?;
        let f = handler.ok_or(tw_status::TW_ERR_INVALID)?;
        let mut registering = node.joining();
        let builder = registering.take().ok_or(tw_status::TW_ERR_BUSY)?;
        if builder.has_handler(name) {
            *registering = Some(builder);
            return Err(node.refuse(
                tw_status::TW_ERR_INVALID,
                format!("a handler is registered as {name:?} already"),
            ));
        }
        let handler = CHandler { f, ctx };
        *registering = Some(builder.handler(name, move |fire: &Fire| call_handler(&handler, fire)));
        Ok(())
    })
}

/// Joins the fleet at `conninfo` (a libpq connection string: key=value pairs or a URL; TLS
/// settings pass through, docs/fleet.md) as `node_name`, and starts firing the timers of
/// the shards it gets. The schema must exist (docs/fleet.md: it is created by an explicit
/// call, never here). Handlers may run before it returns (the unacknowledged fires of the
/// shards it takes over); their calls on the node wait until it has joined. Returns TW_OK,
/// or TW_ERR_INVALID
/// (`f`, `conninfo` or `node_name` NULL, a connection string that cannot be parsed, a node
/// name empty or not UTF-8, settings out of range), TW_ERR_UNREACHABLE (PostgreSQL did not
/// answer or refused the connection), TW_ERR_STORE (no fleet schema, another schema
/// version), TW_ERR_BUSY (joined already), TW_ERR_SHUTDOWN (it left). tw_fleet_error says
/// why; no message repeats the connection string. After a refusal other than BUSY and
/// SHUTDOWN it can be called again.
///
/// # Safety
/// `f` is NULL or a live node; `conninfo` and `node_name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_join(
    f: *mut tw_fleet,
    conninfo: *const c_char,
    node_name: *const c_char,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        // SAFETY: the caller passes NULL or NUL-terminated strings.
        let (conninfo, node_name) = unsafe { (text(conninfo)?, name(node_name)?) };
        let mut registering = node.joining();
        let Some(builder) = registering.as_ref() else {
            let joined = node.runner.read().map_or(true, |r| r.is_some());
            return Err(if joined {
                tw_status::TW_ERR_BUSY
            } else {
                tw_status::TW_ERR_SHUTDOWN
            });
        };
        let options = ConnectOptions::parse(conninfo)
            .map_err(|error| node.refuse(tw_status::TW_ERR_INVALID, error.to_string()))?;
        let runner = node.result(builder.clone().start(&options, node_name))?;
        *node.runner.write().unwrap_or_else(|p| p.into_inner()) = Some(runner);
        *registering = None;
        Ok(())
    })
}

/// Adds the fleet timer (key, name) with a copy of `payload` (`len` bytes; NULL with 0),
/// first due at `first_unix_ms` (this node's wall clock), then every `period_ms` (0 =
/// once), as tw_durable_add. `flags`: TW_DURABLE_REPLACE replaces a timer of the same
/// (key, name). Returns TW_OK once committed, or TW_ERR_UNREACHABLE (PostgreSQL did not
/// answer: the change waits in the node's buffer and is written, in order, when it answers;
/// tw_fleet_flush), TW_ERR_FULL (did not answer and the buffer holds its bound: nothing
/// kept), TW_ERR_INVALID (NULL arguments, unknown flags, a period over 2^63 - 1 ms, the node
/// not joined), TW_ERR_NO_HANDLER (no handler registered on this node under `name`),
/// TW_ERR_EXISTS, TW_ERR_STORE (the database refused it), TW_ERR_SHUTDOWN (it left).
///
/// # Safety
/// `f` is NULL or a live node; `name` NULL or NUL-terminated; `payload` valid for `len`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_add(
    f: *mut tw_fleet,
    key: u64,
    name: *const c_char,
    payload: *const c_void,
    len: usize,
    first_unix_ms: i64,
    period_ms: u64,
    flags: u32,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?;
        // SAFETY: valid for `len` bytes by this function's contract.
        let payload = unsafe { bytes(payload, len) }?;
        let period_ms = i64::try_from(period_ms).map_err(|_| tw_status::TW_ERR_INVALID)?;
        if flags & !TW_DURABLE_REPLACE != 0 {
            return Err(tw_status::TW_ERR_INVALID);
        }
        let timer = NewTimer {
            key,
            name,
            payload,
            due_ms: first_unix_ms,
            period_ms,
            replace: flags & TW_DURABLE_REPLACE != 0,
        };
        let known = node.with_runner(|runner| Ok(runner.has_handler(name)))?;
        if !known {
            return Err(node.refuse(
                tw_status::TW_ERR_NO_HANDLER,
                format!("no handler is registered as {name:?} on this node"),
            ));
        }
        node.change(Change::add(&timer))
    })
}

/// Moves the next deadline of the fleet timer (key, name) to `unix_ms`. Returns TW_OK, or
/// TW_ERR_NOT_FOUND (no such timer), or as tw_fleet_add.
///
/// # Safety
/// As for tw_fleet_add.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_reset(
    f: *mut tw_fleet,
    key: u64,
    name: *const c_char,
    unix_ms: i64,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?.to_owned();
        node.change(Change::Reset {
            key,
            name,
            due_ms: unix_ms,
        })
    })
}

/// Removes the fleet timer (key, name); its unacknowledged fires stay until acknowledged.
/// Returns TW_OK, or TW_ERR_NOT_FOUND, or as tw_fleet_add.
///
/// # Safety
/// As for tw_fleet_add.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_delete(
    f: *mut tw_fleet,
    key: u64,
    name: *const c_char,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        // SAFETY: the caller passes NULL or a NUL-terminated name.
        let name = unsafe { self::name(name) }?.to_owned();
        node.change(Change::Delete { key, name })
    })
}

/// Acknowledges `n` tokens, shard by shard; `*acked` (unless NULL) counts those that
/// matched an unacknowledged fire (on TW_OK). Returns TW_OK, or TW_ERR_FENCED (the lease of
/// a token's shard moved past its epoch: that shard's tokens are refused, to be delivered
/// again by its new owner; the other shards' are acknowledged), TW_ERR_INVALID (`tokens`
/// NULL with `n` > 0, a token's name NULL, empty or not UTF-8, the node not joined),
/// TW_ERR_UNREACHABLE, TW_ERR_STORE, TW_ERR_SHUTDOWN.
///
/// # Safety
/// `f` is NULL or a live node; `tokens` valid for `n` tokens whose names are
/// NUL-terminated; `acked` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_ack(
    f: *mut tw_fleet,
    tokens: *const tw_fleet_token,
    n: usize,
    acked: *mut usize,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        // SAFETY: the caller passes NULL or a writable size_t; NULL asks for no count.
        let acked = unsafe { Out::new(acked) }.ok();
        // SAFETY: NULL or valid for `n` tokens by this function's contract.
        let raw = unsafe { slice(tokens, n) }?;
        let owned = raw
            .iter()
            .map(|token| {
                Ok(FleetToken {
                    key: token.key,
                    // SAFETY: NULL or NUL-terminated by this function's contract.
                    name: unsafe { name(token.name) }?.to_owned(),
                    occurrence_ms: token.occurrence_unix_ms,
                    version: token.version,
                    shard: token.shard,
                    shard_epoch: token.epoch,
                })
            })
            .collect::<Result<Vec<_>, tw_status>>()?;
        let count = node.with_runner(|runner| runner.ack(&owned))?;
        if let Some(acked) = acked {
            acked.put(usize::try_from(count).unwrap_or(usize::MAX));
        }
        Ok(())
    })
}

/// Writes the changes buffered while PostgreSQL did not answer; `*pending` (unless NULL)
/// receives how many still wait. Returns TW_OK (none waits), or TW_ERR_UNREACHABLE
/// (PostgreSQL does not answer: they wait), TW_ERR_INVALID, TW_ERR_SHUTDOWN.
///
/// # Safety
/// `f` is NULL or a live node; `pending` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_flush(f: *mut tw_fleet, pending: *mut usize) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        // SAFETY: the caller passes NULL or a writable size_t.
        let out = unsafe { Out::new(pending) }.ok();
        let flushed = node.with_runner(|runner| {
            let flushed = runner.flush_changes();
            Ok((flushed, runner.pending_changes()))
        })?;
        if let Some(out) = out {
            out.put(flushed.1);
        }
        node.result(flushed.0)
    })
}

/// Leaves the fleet in a planned way: writes the changes still buffered, stops firing,
/// waits for the handlers under way, and hands every shard back at once (the others take
/// them at their next tick, no lease expiring). Returns TW_OK, or TW_ERR_UNREACHABLE
/// (PostgreSQL does not answer: when changes waited in the buffer the node has NOT left and
/// keeps them, call it again later; when they were written but the hand-over was not, it
/// has left and its leases expire after the TTL), TW_ERR_BUSY (called from one of its
/// handlers: it would wait for itself), TW_ERR_INVALID (`f` NULL, not joined),
/// TW_ERR_SHUTDOWN (it left already), TW_ERR_STORE (the hand-over failed otherwise; it has
/// left).
///
/// # Safety
/// `f` is NULL or a live node.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_leave(f: *mut tw_fleet) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        if IN_HANDLER.with(Cell::get) {
            return Err(tw_status::TW_ERR_BUSY);
        }
        // Nothing buffered is dropped: while it cannot be written, the node stays.
        node.with_runner(Runner::flush_changes)?;
        let taken = node
            .runner
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match taken {
            Some(runner) => node.result(runner.leave()),
            None => Err(tw_status::TW_ERR_SHUTDOWN),
        }
    })
}

/// Frees the node, leaving the fleet first if it joined (errors ignored: changes still in
/// the buffer while PostgreSQL does not answer are dropped; tw_fleet_leave first keeps
/// them). Returns TW_OK, or
/// TW_ERR_INVALID (`f` NULL), or TW_ERR_BUSY (called from one of its handlers; nothing is
/// freed). No other call on `f` may run at the same time or after it.
///
/// # Safety
/// `f` is NULL or a live node, not used after this returns TW_OK.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_destroy(f: *mut tw_fleet) -> tw_status {
    guard(|| {
        if f.is_null() {
            return Err(tw_status::TW_ERR_INVALID);
        }
        if IN_HANDLER.with(Cell::get) {
            return Err(tw_status::TW_ERR_BUSY);
        }
        // SAFETY: a live node from tw_fleet_create (Box::into_raw), freed once: the caller
        // uses it no more.
        drop(unsafe { Box::from_raw(f) });
        Ok(())
    })
}

/// The message of the node's last error (empty if none), as tw_durable_error writes its
/// text: TW_ERR_TOO_SMALL when `len` is short, `*needed` the size. It never holds the
/// connection string or its password.
///
/// # Safety
/// `f` is NULL or a live node; `buf` NULL or valid for `len` bytes; `needed` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn tw_fleet_error(
    f: *const tw_fleet,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live node.
        let node = unsafe { fleet(f) }?;
        let message = node.last_error().clone();
        // SAFETY: this function's contract on `buf`, `len` and `needed`.
        unsafe { write_text(&message, buf, len, needed) }
    })
}
