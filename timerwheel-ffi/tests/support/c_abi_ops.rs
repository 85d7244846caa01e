//! An arbitrary byte stream as a sequence of C ABI calls on a manual-mode wheel: adds of
//! every kind, resets, deletes, polls, stats, with bad ids, NULL pointers, huge delays and
//! period 0, and callbacks that delete, reset or add from inside. Most inputs run on a
//! virtual clock, where letting time pass is a `tw_advance` (no sleeping: the fuzzer runs
//! thousands of inputs a second); the others on the real clock, which sleeps a tick at most
//! once per input. Every status must be a
//! valid `tw_status` (never TW_ERR_INTERNAL), the statuses the contract fixes must come
//! back, and after `tw_destroy` every accepted timer's drop has run exactly once and no
//! one-shot ran twice. Shared by the fuzz target `c_abi` and its stable replay.
//!
//! The calls go through an `extern "C"` block written from the header, as a C program
//! makes them; the crate is linked for its symbols only.
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr;

use timerwheel::{tw_config, tw_stats, tw_timer_id};

/// The opaque `tw_wheel` as C sees it.
#[repr(C)]
struct tw_wheel {
    _opaque: [u8; 0],
}

type Callback = Option<unsafe extern "C" fn(tw_timer_id, *mut c_void)>;
type DropFn = Option<unsafe extern "C" fn(*mut c_void)>;

extern "C" {
    fn tw_config_init(cfg: *mut tw_config);
    fn tw_create(cfg: *const tw_config, out: *mut *mut tw_wheel) -> u32;
    fn tw_add(
        w: *mut tw_wheel,
        delay_ms: u64,
        cb: Callback,
        user_data: *mut c_void,
        drop: DropFn,
        out_id: *mut tw_timer_id,
    ) -> u32;
    fn tw_add_periodic(
        w: *mut tw_wheel,
        delay_ms: u64,
        period_ms: u64,
        mode: u32,
        cb: Callback,
        user_data: *mut c_void,
        drop: DropFn,
        out_id: *mut tw_timer_id,
    ) -> u32;
    fn tw_add_at(
        w: *mut tw_wheel,
        unix_ms: i64,
        cb: Callback,
        user_data: *mut c_void,
        drop: DropFn,
        out_id: *mut tw_timer_id,
    ) -> u32;
    fn tw_reset(w: *mut tw_wheel, id: tw_timer_id, delay_ms: u64) -> u32;
    fn tw_delete(w: *mut tw_wheel, id: tw_timer_id) -> u32;
    fn tw_delete_sync(w: *mut tw_wheel, id: tw_timer_id) -> u32;
    fn tw_get_stats(w: *const tw_wheel, out: *mut tw_stats) -> u32;
    fn tw_next_timeout_ms(w: *mut tw_wheel) -> i64;
    fn tw_poll(w: *mut tw_wheel, ran: *mut usize) -> u32;
    fn tw_advance(w: *mut tw_wheel, ms: u64, ran: *mut usize) -> u32;
    fn tw_destroy(w: *mut tw_wheel) -> u32;
    fn tw_status_str(s: u32) -> *const std::ffi::c_char;
}

const OK: u32 = 0;
const INVALID: u32 = 1;
const NOT_FOUND: u32 = 2;
const BUSY: u32 = 5;
const INTERNAL: u32 = 6;

/// The wheel's tick: the shortest allowed, so that waiting for timers costs little.
const TICK_US: u64 = 100;
/// Most calls taken from one input.
const MAX_CALLS: usize = 400;

/// What a callback does besides counting its run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Nothing,
    DeleteSelf,
    ResetSelf,
    DeleteSyncSelf,
    DestroyWheel,
    AddOneMore,
}

/// One accepted timer as the caller sees it.
struct Timer {
    id: tw_timer_id,
    periodic: bool,
    has_drop: bool,
    action: Action,
    runs: u32,
    drops: u32,
    /// A delete returned TW_OK: no run may start after that.
    deleted: bool,
}

#[derive(Default)]
struct World {
    wheel: *mut tw_wheel,
    /// The wheel runs on the real clock (else a virtual one).
    real_clock: bool,
    /// A tick was slept already (on the real clock, once per input at most).
    slept: bool,
    timers: Vec<Timer>,
    /// Ids ever seen, ended ones included, for deletes and resets of stale ids.
    ids: Vec<tw_timer_id>,
    /// The index in `timers` of each id ever accepted.
    index_of_id: HashMap<tw_timer_id, usize>,
    /// A violation seen inside a callback or drop, reported after the call returns.
    violation: Option<String>,
}

impl World {
    /// Starts the books of an input on `wheel`, keeping the allocations of the last one
    /// (growing them again for every input took a tenth of the target's time under ASan).
    fn begin(&mut self, wheel: *mut tw_wheel, real_clock: bool) {
        self.wheel = wheel;
        self.real_clock = real_clock;
        self.slept = false;
        self.timers.clear();
        self.ids.clear();
        self.index_of_id.clear();
        self.violation = None;
    }
}

thread_local! {
    static WORLD: RefCell<World> = RefCell::new(World::default());
}

fn with_world<R>(f: impl FnOnce(&mut World) -> R) -> R {
    WORLD.with(|w| f(&mut w.borrow_mut()))
}

fn fail(message: String) {
    with_world(|w| {
        w.violation.get_or_insert(message);
    });
}

fn index_of(user_data: *mut c_void) -> usize {
    user_data as usize - 1
}

unsafe extern "C" fn on_fire(id: tw_timer_id, user_data: *mut c_void) {
    let index = index_of(user_data);
    let (action, wheel) = with_world(|w| {
        let timer = &mut w.timers[index];
        timer.runs += 1;
        let problem = if timer.id != id {
            Some(format!("callback of {:#x} got id {id:#x}", timer.id))
        } else if timer.deleted {
            Some(format!("{id:#x} ran after a delete returned TW_OK"))
        } else if !timer.periodic && timer.runs > 1 {
            Some(format!("one-shot {id:#x} ran {} times", timer.runs))
        } else if timer.drops > 0 {
            Some(format!("{id:#x} ran after its drop"))
        } else {
            None
        };
        if let Some(problem) = problem {
            w.violation.get_or_insert(problem);
        }
        (timer.action, w.wheel)
    });
    // SAFETY: the wheel is live while a callback of it runs; the ids are plain numbers.
    unsafe { act(action, wheel, id, index) }
}

/// Calls back into the wheel from a callback; only the statuses the contract fixes are
/// checked here.
unsafe fn act(action: Action, wheel: *mut tw_wheel, id: tw_timer_id, index: usize) {
    let periodic = with_world(|w| w.timers[index].periodic);
    // SAFETY (all calls below): `wheel` is live, as the caller says.
    match action {
        Action::Nothing => {}
        Action::DeleteSelf => {
            let status = unsafe { tw_delete(wheel, id) };
            let want = if periodic { OK } else { NOT_FOUND };
            expect("tw_delete from its own callback", status, want);
            if status == OK {
                with_world(|w| w.timers[index].deleted = true);
            }
        }
        Action::ResetSelf => {
            // On a virtual clock a reset to 0 from the callback would run again in the same
            // advance, for ever: it moves on by a millisecond there.
            let delay = u64::from(!with_world(|w| w.real_clock));
            let status = unsafe { tw_reset(wheel, id, delay) };
            let want = if periodic { OK } else { NOT_FOUND };
            expect("tw_reset from its own callback", status, want);
        }
        Action::DeleteSyncSelf => {
            let status = unsafe { tw_delete_sync(wheel, id) };
            expect("tw_delete_sync from its own callback", status, BUSY);
        }
        Action::DestroyWheel => {
            let status = unsafe { tw_destroy(wheel) };
            expect("tw_destroy from a callback", status, BUSY);
        }
        Action::AddOneMore => {
            unsafe { add_one_shot(wheel, 0, Action::Nothing) };
        }
    }
}

unsafe extern "C" fn on_drop(user_data: *mut c_void) {
    let index = index_of(user_data);
    with_world(|w| {
        let timer = &mut w.timers[index];
        timer.drops += 1;
        if timer.drops > 1 {
            let id = timer.id;
            w.violation
                .get_or_insert(format!("{id:#x} dropped {} times", timer.drops));
        }
    });
}

fn expect(what: &str, status: u32, want: u32) {
    if status != want {
        fail(format!("{what}: status {status}, expected {want}"));
    }
}

/// Any status must be one of the enum's values and not an internal error (a caught panic).
fn valid(what: &str, status: u32) -> u32 {
    if status >= INTERNAL {
        fail(format!("{what}: status {status}"));
    }
    status
}

/// Reads numbers off the front of the input; zero once it is used up.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (&first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        first
    }

    fn number(&mut self, n: usize) -> u64 {
        (0..n).fold(0, |acc, i| acc | u64::from(self.byte()) << (8 * i))
    }

    /// A delay in ms: mostly due at once or soon, sometimes huge.
    fn delay(&mut self) -> u64 {
        match self.byte() % 8 {
            0..=3 => 0,
            4 | 5 => u64::from(self.byte() % 3),
            6 => self.number(4),
            _ => u64::MAX - u64::from(self.byte()),
        }
    }

    fn action(&mut self) -> Action {
        match self.byte() % 12 {
            0 => Action::DeleteSelf,
            1 => Action::ResetSelf,
            2 => Action::DeleteSyncSelf,
            3 => Action::DestroyWheel,
            4 => Action::AddOneMore,
            _ => Action::Nothing,
        }
    }

    /// An id: one handed out (live or ended), 0, or any number.
    fn id(&mut self) -> tw_timer_id {
        let pick = self.byte();
        let ids_len = with_world(|w| w.ids.len());
        match pick % 8 {
            0 => 0,
            1 => self.number(8),
            _ if ids_len > 0 => with_world(|w| w.ids[usize::from(pick) % ids_len]),
            _ => self.number(2),
        }
    }
}

/// A new timer record; its user data is its index plus one (never NULL).
fn record(periodic: bool, has_drop: bool, action: Action) -> *mut c_void {
    with_world(|w| {
        w.timers.push(Timer {
            id: 0,
            periodic,
            has_drop,
            action,
            runs: 0,
            drops: 0,
            deleted: false,
        });
        w.timers.len() as *mut c_void
    })
}

/// Settles an add: on TW_OK the id is recorded; on any error the record is dropped from
/// the books (neither cb nor drop may ever see it: its index stays unused).
fn settle_add(what: &str, status: u32, user_data: *mut c_void, id: tw_timer_id) {
    valid(what, status);
    let index = index_of(user_data);
    with_world(|w| {
        if status == OK {
            w.timers[index].id = id;
            w.ids.push(id);
            w.index_of_id.insert(id, index);
        } else {
            // Never accepted: mark it so that the end check expects nothing of it.
            w.timers[index].has_drop = false;
            w.timers[index].id = 0;
        }
    });
}

unsafe fn add_one_shot(wheel: *mut tw_wheel, delay: u64, action: Action) {
    let user_data = record(false, true, action);
    let mut id = 0;
    // SAFETY: `wheel` is live; `id` is writable.
    let status = unsafe {
        tw_add(
            wheel,
            delay,
            Some(on_fire),
            user_data,
            Some(on_drop),
            &mut id,
        )
    };
    settle_add("tw_add", status, user_data, id);
}

/// One call decoded from the input.
unsafe fn call(wheel: *mut tw_wheel, bytes: &mut Bytes) {
    // SAFETY (all calls below): `wheel` is live; every other pointer is NULL on purpose or
    // points at a local.
    match bytes.byte() % 12 {
        0 | 1 => unsafe { add_one_shot(wheel, bytes.delay(), bytes.action()) },
        2 => unsafe { add_with_bad_arguments(wheel, bytes) },
        3 => unsafe { add_periodic(wheel, bytes) },
        4 => {
            let unix_ms = match bytes.byte() % 4 {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => bytes.number(8) as i64,
            };
            let user_data = record(false, true, Action::Nothing);
            let mut id = 0;
            let status = unsafe {
                tw_add_at(
                    wheel,
                    unix_ms,
                    Some(on_fire),
                    user_data,
                    Some(on_drop),
                    &mut id,
                )
            };
            settle_add("tw_add_at", status, user_data, id);
        }
        5 => {
            let id = bytes.id();
            let status = valid("tw_reset", unsafe { tw_reset(wheel, id, bytes.delay()) });
            if id == 0 {
                expect("tw_reset of id 0", status, NOT_FOUND);
            }
        }
        6 | 7 => unsafe { delete(wheel, bytes.id(), bytes.byte() % 2 == 0) },
        8 | 9 => {
            let mut ran = usize::MAX;
            let out = if bytes.byte() % 8 == 0 {
                ptr::null_mut()
            } else {
                &mut ran
            };
            let status = valid("tw_poll", unsafe { tw_poll(wheel, out) });
            if out.is_null() {
                expect("tw_poll with ran NULL", status, INVALID);
            }
        }
        10 => {
            let ms = unsafe { tw_next_timeout_ms(wheel) };
            if ms < -1 {
                fail(format!("tw_next_timeout_ms gave {ms}"));
            }
            unsafe { let_time_pass(wheel, bytes.byte() % 3) };
        }
        _ => unsafe { check_stats(wheel) },
    }
}

/// Lets time pass so that timers come due: `ms` on a virtual clock (running what falls
/// due), a tick of real time once per input on the real clock.
unsafe fn let_time_pass(wheel: *mut tw_wheel, ms: u8) {
    let (real_clock, slept) = with_world(|w| (w.real_clock, std::mem::replace(&mut w.slept, true)));
    if !real_clock {
        let mut ran = 0;
        // SAFETY: `wheel` is live; `ran` is a local.
        expect(
            "tw_advance",
            unsafe { tw_advance(wheel, u64::from(ms), &mut ran) },
            OK,
        );
    } else if !slept {
        std::thread::sleep(std::time::Duration::from_micros(TICK_US + 50));
    }
}

unsafe fn add_periodic(wheel: *mut tw_wheel, bytes: &mut Bytes) {
    let delay = bytes.delay();
    let period = match bytes.byte() % 4 {
        0 => 0,
        1 => u64::MAX,
        _ => 1 + u64::from(bytes.byte() % 3),
    };
    let mode = u32::from(bytes.byte() % 3);
    let user_data = record(true, true, bytes.action());
    let mut id = 0;
    // SAFETY: `wheel` is live; `id` is writable.
    let status = unsafe {
        tw_add_periodic(
            wheel,
            delay,
            period,
            mode,
            Some(on_fire),
            user_data,
            Some(on_drop),
            &mut id,
        )
    };
    settle_add("tw_add_periodic", status, user_data, id);
    if period == 0 || mode > 1 {
        expect(
            "tw_add_periodic with period 0 or a bad mode",
            status,
            INVALID,
        );
    }
}

/// Adds with a NULL callback, a NULL out pointer or a NULL drop (allowed).
unsafe fn add_with_bad_arguments(wheel: *mut tw_wheel, bytes: &mut Bytes) {
    let which = bytes.byte() % 3;
    let user_data = record(false, which != 2, Action::Nothing);
    let mut id = 0;
    let cb: Callback = if which == 0 { None } else { Some(on_fire) };
    let drop: DropFn = if which == 2 { None } else { Some(on_drop) };
    let out: *mut tw_timer_id = if which == 1 { ptr::null_mut() } else { &mut id };
    // SAFETY: `wheel` is live; `out` is NULL or writable.
    let status = unsafe { tw_add(wheel, bytes.delay(), cb, user_data, drop, out) };
    settle_add("tw_add with a NULL argument", status, user_data, id);
    if which < 2 {
        expect("tw_add with cb or out_id NULL", status, INVALID);
    }
}

unsafe fn delete(wheel: *mut tw_wheel, id: tw_timer_id, sync: bool) {
    // SAFETY: `wheel` is live.
    let status = unsafe {
        if sync {
            tw_delete_sync(wheel, id)
        } else {
            tw_delete(wheel, id)
        }
    };
    valid("tw_delete", status);
    if id == 0 {
        expect("tw_delete of id 0", status, NOT_FOUND);
    }
    if status != OK {
        return;
    }
    with_world(|w| {
        let Some(&index) = w.index_of_id.get(&id) else {
            w.violation
                .get_or_insert(format!("tw_delete of unknown {id:#x} returned TW_OK"));
            return;
        };
        let timer = &mut w.timers[index];
        if timer.deleted {
            w.violation
                .get_or_insert(format!("{id:#x} deleted twice with TW_OK"));
        }
        timer.deleted = true;
        // No callback runs here (manual mode, outside tw_poll): the drop is done.
        if timer.has_drop && timer.drops != 1 {
            w.violation
                .get_or_insert(format!("{id:#x} not dropped when tw_delete returned"));
        }
    });
}

unsafe fn check_stats(wheel: *mut tw_wheel) {
    // SAFETY: `wheel` is live; NULL out is the case under test.
    expect(
        "tw_get_stats with out NULL",
        unsafe { tw_get_stats(wheel, ptr::null_mut()) },
        INVALID,
    );
    // SAFETY: tw_stats is plain numbers; all zeros is a value.
    let mut stats: tw_stats = unsafe { std::mem::zeroed() };
    // SAFETY: `wheel` is live; `stats` is writable.
    expect(
        "tw_get_stats",
        unsafe { tw_get_stats(wheel, &mut stats) },
        OK,
    );
    let ended = stats.fired_one_shot + stats.cancelled + stats.discarded;
    if stats.added != ended + stats.pending {
        fail(format!("stats do not add up: {stats:?}"));
    }
    let accepted = with_world(|w| w.index_of_id.len()) as u64;
    if stats.added != accepted {
        fail(format!(
            "stats.added {} vs {accepted} adds accepted",
            stats.added
        ));
    }
}

/// The calls that take no wheel or a NULL one.
unsafe fn poke_null_wheel(bytes: &mut Bytes) {
    let null = ptr::null_mut();
    let mut id = 0;
    // SAFETY: every call must refuse the NULL wheel without touching anything.
    unsafe {
        let user_data = ptr::dangling_mut::<c_void>();
        expect(
            "tw_add NULL wheel",
            tw_add(null, 0, Some(on_fire), user_data, Some(on_drop), &mut id),
            INVALID,
        );
        expect("tw_reset NULL wheel", tw_reset(null, 1, 0), INVALID);
        expect("tw_delete NULL wheel", tw_delete(null, 1), INVALID);
        expect(
            "tw_delete_sync NULL wheel",
            tw_delete_sync(null, 1),
            INVALID,
        );
        expect("tw_poll NULL wheel", tw_poll(null, &mut 0), INVALID);
        expect(
            "tw_get_stats NULL wheel",
            tw_get_stats(null, ptr::null_mut()),
            INVALID,
        );
        expect("tw_destroy NULL wheel", tw_destroy(null), INVALID);
        if tw_next_timeout_ms(null) != -1 {
            fail("tw_next_timeout_ms of NULL is not -1".into());
        }
        if tw_status_str(bytes.number(4) as u32).is_null() {
            fail("tw_status_str gave NULL".into());
        }
        expect(
            "tw_create out NULL",
            tw_create(ptr::null(), ptr::null_mut()),
            INVALID,
        );
    }
}

/// `tw_config_init`'s defaults, read once a thread: they are the same for every input of a
/// process, and reading them (the CPU count, from /proc) costs more than a short input. (A
/// thread-local, since `tw_config` holds a pointer, `store_path`, and is not `Sync`.)
fn default_config() -> tw_config {
    thread_local! {
        static DEFAULT: tw_config = {
            // SAFETY: tw_config is numbers and a null pointer; tw_config_init fills every field.
            let mut cfg: tw_config = unsafe { std::mem::zeroed() };
            // SAFETY: `cfg` is writable.
            unsafe { tw_config_init(&mut cfg) };
            cfg
        };
    }
    DEFAULT.with(|cfg| *cfg)
}

/// A manual wheel's config: a virtual clock mostly (one input in 32 runs on the real clock
/// and sleeps a tick of real time: a sleep takes longer than a whole input on a virtual
/// one), maybe a small capacity.
fn config(bytes: &mut Bytes) -> tw_config {
    let mut cfg = default_config();
    cfg.manual = 1;
    cfg.clock = u32::from(bytes.byte() % 32 != 0);
    cfg.tick_us = TICK_US;
    cfg.max_timers = match bytes.byte() % 4 {
        0 => u64::from(bytes.byte() % 16),
        _ => 0,
    };
    cfg
}

/// Decodes `data`, makes its calls, destroys the wheel and checks the books; panics with
/// the first violation.
pub fn run(data: &[u8]) {
    let mut bytes = Bytes(data);
    let cfg = config(&mut bytes);
    let mut wheel = ptr::null_mut();
    // SAFETY: `cfg` and `wheel` are locals.
    let status = unsafe { tw_create(&cfg, &mut wheel) };
    assert_eq!(status, OK, "tw_create of a manual wheel");
    with_world(|w| w.begin(wheel, cfg.clock == 0));
    // SAFETY: nothing under test touches memory of ours but through the pointers given.
    unsafe { poke_null_wheel(&mut bytes) };
    for _ in 0..MAX_CALLS {
        if bytes.0.is_empty() {
            break;
        }
        // SAFETY: the wheel lives until the tw_destroy below.
        unsafe { call(wheel, &mut bytes) };
        if let Some(violation) = with_world(|w| w.violation.take()) {
            panic!("{violation}");
        }
    }
    // SAFETY: the wheel is live; checked before it goes.
    unsafe { check_stats(wheel) };
    // SAFETY: the wheel is live and no call on it is under way.
    assert_eq!(unsafe { tw_destroy(wheel) }, OK, "tw_destroy");
    with_world(check_books);
}

/// After destroy: every accepted timer with a drop was dropped exactly once.
fn check_books(world: &mut World) {
    if let Some(violation) = world.violation.take() {
        panic!("{violation}");
    }
    for timer in world.timers.iter().filter(|t| t.id != 0 && t.has_drop) {
        assert_eq!(
            timer.drops, 1,
            "{:#x} dropped {} times",
            timer.id, timer.drops
        );
    }
    for timer in world.timers.iter().filter(|t| t.id == 0) {
        assert_eq!(
            timer.runs + timer.drops,
            0,
            "a refused add was run or dropped"
        );
    }
}
