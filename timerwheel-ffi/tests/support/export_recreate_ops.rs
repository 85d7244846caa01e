//! Export and re-creation through the C ABI, driven by a structured scenario (the
//! `arbitrary` crate): one-shots, periodic timers of both modes, `tw_add_at` and anchored
//! periodic timers (`tw_add_periodic_at`, both missed-point policies) on a virtual-clock
//! wheel, some deleted or reset, the clock advanced; then `tw_export`, and every exported
//! timer re-created on a fresh virtual wheel that starts at the same instant, as
//! docs/c.md says (one-shots with `tw_add_at(due_unix_ms)`, periodic timers with
//! `tw_add_periodic_at(due_unix_ms, period, mode, TW_MISSED_RUN_ONCE)`). Both wheels then
//! advance alike: each timer must run at the same instants on both. Shared by the fuzz
//! target `export_recreate` and its stable replay.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;

use arbitrary::{Arbitrary, Unstructured};
use timerwheel::{
    tw_add, tw_add_at, tw_advance, tw_clock, tw_config, tw_config_init, tw_create, tw_delete,
    tw_destroy, tw_export, tw_now_ms, tw_reset, tw_status, tw_timer_id, tw_timer_info, tw_wheel,
};

#[path = "raw_periodic.rs"]
mod raw_periodic;
use raw_periodic::{tw_add_periodic, tw_add_periodic_at};

/// Most timers and advances of one scenario.
const MAX_OPS: usize = 48;
const MAX_STEPS: usize = 4;
/// Periods from this many ms: runs in a scenario stay in the thousands.
const MIN_PERIOD_MS: u64 = 10;
const NS_PER_MS: u64 = 1_000_000;
/// The original wheel's start on the wall clock.
const START_MS: i64 = 1_764_000_000_000;
const TW_TIMER_PERIODIC: u32 = 1;
const TW_MISSED_RUN_ONCE: u32 = 0;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Add(u16),
    Periodic {
        delay: u16,
        period: u16,
        fixed_delay: bool,
    },
    AddAt(i16),
    PeriodicAt {
        first: i32,
        period: u16,
        fixed_delay: bool,
        skip: bool,
    },
    Reset {
        pick: u8,
        delay: u16,
    },
    Delete {
        pick: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Scenario {
    ops: Vec<Op>,
    before_ms: u16,
    after_ms: Vec<u16>,
}

/// Which wheel ran which timer (its tag, the index of the op that added it) at which
/// virtual wall-clock time.
type Run = (usize, usize, i64);

thread_local! {
    static WHEELS: RefCell<[*mut tw_wheel; 2]> = const { RefCell::new([ptr::null_mut(); 2]) };
    static RUNS: RefCell<Vec<Run>> = const { RefCell::new(Vec::new()) };
}

/// `user_data` carries the wheel (0 the original, 1 the re-created one) and the tag.
fn user_data(wheel: usize, tag: usize) -> *mut c_void {
    (tag * 2 + wheel) as *mut c_void
}

unsafe extern "C" fn record(_: tw_timer_id, user_data: *mut c_void) {
    let (wheel, tag) = ((user_data as usize) % 2, (user_data as usize) / 2);
    // SAFETY: the wheel is live while it runs callbacks.
    let now = WHEELS.with(|w| unsafe { tw_now_ms(w.borrow()[wheel]) });
    RUNS.with(|runs| runs.borrow_mut().push((wheel, tag, now)));
}

fn virtual_wheel(start_ms: i64) -> *mut tw_wheel {
    // SAFETY: tw_config is plain numbers; tw_config_init fills every field.
    let mut cfg: tw_config = unsafe { std::mem::zeroed() };
    let mut wheel = ptr::null_mut();
    // SAFETY: `cfg` and `wheel` are locals.
    unsafe {
        tw_config_init(&mut cfg);
        cfg.tick_us = 1_000;
        cfg.clock = tw_clock::TW_CLOCK_VIRTUAL as u32;
        cfg.virtual_start_unix_ms = start_ms;
        assert_eq!(tw_create(&cfg, &mut wheel), tw_status::TW_OK);
    }
    wheel
}

fn period(ms: u16) -> u64 {
    MIN_PERIOD_MS + u64::from(ms % 2_000)
}

/// Applies one op to the original wheel; the ids it added so far in `ids`.
fn apply(w: *mut tw_wheel, tag: usize, op: Op, ids: &mut Vec<tw_timer_id>) {
    let (cb, ud, wv) = (Some(record as _), user_data(0, tag), w.cast::<c_void>());
    let mode = |fixed_delay: bool| u32::from(fixed_delay);
    let mut id = 0;
    let pick = |pick: u8| ids.get(usize::from(pick) % ids.len().max(1)).copied();
    // SAFETY: a live wheel; the callback reads only its user_data; `id` is a local.
    let status = unsafe {
        match op {
            Op::Add(delay) => tw_add(w, u64::from(delay % 5_000), cb, ud, None, &mut id),
            Op::Periodic {
                delay,
                period: p,
                fixed_delay,
            } => {
                let delay = u64::from(delay % 5_000);
                tw_add_periodic(
                    wv,
                    delay,
                    period(p),
                    mode(fixed_delay),
                    cb,
                    ud,
                    None,
                    &mut id,
                )
            }
            Op::AddAt(offset) => tw_add_at(w, START_MS + i64::from(offset), cb, ud, None, &mut id),
            Op::PeriodicAt {
                first,
                period: p,
                fixed_delay,
                skip,
            } => {
                let first = START_MS + i64::from(first);
                let missed = u32::from(skip);
                tw_add_periodic_at(
                    wv,
                    first,
                    period(p),
                    mode(fixed_delay),
                    missed,
                    cb,
                    ud,
                    None,
                    &mut id,
                )
            }
            Op::Reset { pick: p, delay } => match pick(p) {
                Some(old) => tw_reset(w, old, u64::from(delay % 5_000)),
                None => tw_status::TW_OK,
            },
            Op::Delete { pick: p } => match pick(p) {
                Some(old) => tw_delete(w, old),
                None => tw_status::TW_OK,
            },
        }
    };
    // A reset or delete of a timer that ran out is TW_ERR_NOT_FOUND.
    assert!(
        matches!(status, tw_status::TW_OK | tw_status::TW_ERR_NOT_FOUND),
        "{op:?}: {status:?}"
    );
    if id != 0 {
        ids.push(id);
    }
}

unsafe extern "C" fn collect(ctx: *mut c_void, info: *const tw_timer_info) {
    // SAFETY: `ctx` is the Vec tw_export was given; `info` is valid for the call.
    unsafe { (*ctx.cast::<Vec<tw_timer_info>>()).push(*info) };
}

fn export(w: *mut tw_wheel) -> Vec<tw_timer_info> {
    let mut infos: Vec<tw_timer_info> = Vec::new();
    let mut running = usize::MAX;
    let ctx = ptr::from_mut(&mut infos).cast::<c_void>();
    // SAFETY: a live wheel; `collect` pushes onto `infos`; `running` is a local.
    let status = unsafe { tw_export(w, Some(collect), ctx, &mut running) };
    assert_eq!((status, running), (tw_status::TW_OK, 0));
    infos
}

/// Re-creates one exported timer on `w` as docs/c.md says.
fn recreate(w: *mut tw_wheel, info: &tw_timer_info) {
    let tag = (info.user_data as usize) / 2;
    let (cb, ud, mut id) = (Some(record as _), user_data(1, tag), 0);
    // SAFETY: a live wheel; the callback reads only its user_data; `id` is a local.
    let status = unsafe {
        if info.kind == TW_TIMER_PERIODIC {
            assert_eq!(
                info.period_ns % NS_PER_MS,
                0,
                "a period of whole ms: {info:?}"
            );
            let period_ms = info.period_ns / NS_PER_MS;
            let wv = w.cast::<c_void>();
            tw_add_periodic_at(
                wv,
                info.due_unix_ms,
                period_ms,
                info.mode,
                TW_MISSED_RUN_ONCE,
                cb,
                ud,
                None,
                &mut id,
            )
        } else {
            tw_add_at(w, info.due_unix_ms, cb, ud, None, &mut id)
        }
    };
    assert_eq!(status, tw_status::TW_OK, "re-creating {info:?}");
}

/// The pending timers of `w` as (tag, next run on the wall clock, period, mode), sorted.
fn schedules(w: *mut tw_wheel) -> Vec<(usize, i64, u64, u32)> {
    let infos = export(w).into_iter();
    let mut schedules: Vec<_> = infos
        .map(|i| {
            (
                (i.user_data as usize) / 2,
                i.due_unix_ms,
                i.period_ns,
                i.mode,
            )
        })
        .collect();
    schedules.sort_unstable();
    schedules
}

/// Advances `w` by `ms`; the runs it caused, as (tag, wall ms), sorted.
fn advance(w: *mut tw_wheel, ms: u64) -> Vec<(i64, usize)> {
    RUNS.with(|runs| runs.borrow_mut().clear());
    let mut ran = 0;
    // SAFETY: a live wheel; `ran` is a local.
    assert_eq!(unsafe { tw_advance(w, ms, &mut ran) }, tw_status::TW_OK);
    let runs = RUNS.with(|runs| std::mem::take(&mut *runs.borrow_mut()));
    assert_eq!(runs.len(), ran);
    let mut runs: Vec<_> = runs.into_iter().map(|(_, tag, at)| (at, tag)).collect();
    runs.sort_unstable();
    runs
}

/// Decodes `data` into a scenario and runs it; panics on any broken invariant.
pub fn run(data: &[u8]) {
    let Ok(scenario) = Scenario::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let original = virtual_wheel(START_MS);
    WHEELS.with(|w| w.borrow_mut()[0] = original);
    let mut ids = Vec::new();
    for (tag, &op) in scenario.ops.iter().take(MAX_OPS).enumerate() {
        apply(original, tag, op, &mut ids);
    }
    advance(original, u64::from(scenario.before_ms % 5_000));
    let infos = export(original);
    // SAFETY: a live wheel.
    let now = unsafe { tw_now_ms(original) };
    let copy = virtual_wheel(now);
    WHEELS.with(|w| w.borrow_mut()[1] = copy);
    infos.iter().for_each(|info| recreate(copy, info));
    for &step in scenario.after_ms.iter().take(MAX_STEPS) {
        let step = u64::from(step % 2_000);
        let (ran, reran) = (advance(original, step), advance(copy, step));
        assert_eq!(
            ran, reran,
            "the original's runs and the re-created ones' after {step} ms"
        );
    }
    assert_eq!(
        schedules(copy),
        schedules(original),
        "the pending timers' schedules"
    );
    for wheel in [original, copy] {
        // SAFETY: the wheels made above, each destroyed once.
        assert_eq!(unsafe { tw_destroy(wheel) }, tw_status::TW_OK);
    }
    WHEELS.with(|w| *w.borrow_mut() = [ptr::null_mut(); 2]);
}
