//! A wheel on a virtual clock driven through the C ABI by a structured scenario (the
//! `arbitrary` crate): one-shot and periodic timers of both modes, anchored periodic timers
//! (`tw_add_periodic_at`, both missed-point policies), resets and deletes, `tw_advance` and
//! `tw_advance_to_next`, with extreme delays, periods and starts. A model computes the
//! exact due point of every run; each callback must run at its point's tick (seen through
//! `tw_now_ms`), every run due by the end of an advance must have run, none other, in
//! nondecreasing time, and every accepted timer is dropped once at destroy.
//!
//! Past the model's horizon (2^63 ns, 292 years of virtual time) the scenario ends after
//! the call that gets there: that call must return, and run nothing early. Shared by the
//! fuzz target `virtual_clock` and its stable replay.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;

use arbitrary::{Arbitrary, Unstructured};
use timerwheel::{
    tw_add, tw_advance, tw_advance_to_next, tw_callback, tw_clock, tw_config, tw_config_init,
    tw_create, tw_delete, tw_destroy, tw_drop_fn, tw_now_ms, tw_reset, tw_status, tw_timer_id,
    tw_wheel,
};

#[path = "raw_periodic.rs"]
mod raw_periodic;
use raw_periodic::{tw_add_periodic, tw_add_periodic_at};

const NS_PER_MS: u128 = 1_000_000;
/// Beyond this many ns of virtual time the model stops predicting (see the module docs).
const HORIZON: u128 = 1 << 63;
/// Most runs one call may cause: a scenario asking for more skips that call.
const MAX_RUNS_PER_CALL: usize = 2_000;
/// Most operations of one scenario.
const MAX_OPS: usize = 64;
/// 2^64 ns in ms: the delays near it cross the end of the clock's range.
const CLOCK_END_MS: u64 = u64::MAX / 1_000_000;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Tick {
    Us100,
    Us250,
    Ms1,
    S1,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Start {
    Epoch,
    Recent,
    BeforeEpoch,
}

/// A delay or period in ms, weighted to the edges.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Delay {
    Zero,
    Small(u8),
    Any(u32),
    NearClockEnd(i16),
    NearMax(u16),
}

impl Delay {
    fn ms(self) -> u64 {
        match self {
            Delay::Zero => 0,
            Delay::Small(n) => u64::from(n % 8),
            Delay::Any(n) => u64::from(n),
            Delay::NearClockEnd(d) => CLOCK_END_MS.saturating_add_signed(i64::from(d)),
            Delay::NearMax(d) => u64::MAX - u64::from(d),
        }
    }
}

/// The start of an anchored schedule, relative to the virtual clock's wall time.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum First {
    Ahead(Delay),
    Behind(Delay),
    Min,
    Max,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Add(Delay),
    Periodic {
        delay: Delay,
        period: Delay,
        fixed_delay: bool,
    },
    PeriodicAt {
        first: First,
        period: Delay,
        fixed_delay: bool,
        skip: bool,
    },
    Reset {
        pick: u8,
        delay: Delay,
    },
    Delete {
        pick: u8,
    },
    Advance(Delay),
    AdvanceToNext,
}

#[derive(Arbitrary, Debug)]
struct Scenario {
    tick: Tick,
    start: Start,
    ops: Vec<Op>,
}

/// A timer as the model sees it.
#[derive(Clone, Debug)]
struct Timer {
    id: tw_timer_id,
    /// The exact point of its next run, ns since the clock's origin.
    point: u128,
    /// Periodic: its period in ns and mode; and the grid point after a catch-up run.
    period: Option<(u128, bool)>,
    grid_next: Option<u128>,
    pending: bool,
}

#[derive(Clone)]
struct Model {
    tick_ns: u128,
    start_ms: i64,
    now: u128,
    timers: Vec<Timer>,
}

impl Model {
    fn fire(&self, point: u128) -> u128 {
        point.div_ceil(self.tick_ns) * self.tick_ns
    }

    fn wall_ms(&self, ns: u128) -> i64 {
        self.start_ms + (ns / NS_PER_MS) as i64
    }

    /// The pending timer that runs next and when.
    fn next_run(&self) -> Option<(usize, u128)> {
        let pending = self.timers.iter().enumerate().filter(|(_, t)| t.pending);
        pending
            .map(|(i, t)| (i, self.fire(t.point).max(self.now)))
            .min_by_key(|&(_, at)| at)
    }

    /// Whether the runs due by `target` are few enough for one call: a periodic timer runs
    /// at every tick of its schedule (at least one a tick), however far the clock goes.
    fn runs_bounded(&self, target: u128) -> bool {
        let runs: u128 = (self.timers.iter())
            .filter(|t| t.pending && self.fire(t.point) <= target)
            .map(|t| match t.period {
                None => 1,
                Some((period, _)) => (target - t.point) / period.max(self.tick_ns) + 1,
            })
            .sum();
        runs <= MAX_RUNS_PER_CALL as u128
    }

    /// Runs everything due by `target` (≤ HORIZON); the runs as (timer, wall ms), or None
    /// when there would be too many.
    fn advance_to(&mut self, target: u128) -> Option<Vec<(usize, i64)>> {
        let mut runs = Vec::new();
        while let Some((index, at)) = self.next_run().filter(|&(_, at)| at <= target) {
            if runs.len() == MAX_RUNS_PER_CALL {
                return None;
            }
            self.now = at;
            runs.push((index, self.wall_ms(at)));
            let timer = &mut self.timers[index];
            match timer.period {
                None => timer.pending = false,
                Some((period, fixed_delay)) => {
                    timer.point = match timer.grid_next.take() {
                        Some(grid) => grid,
                        None if fixed_delay => at + period,
                        // A fixed-rate run coalesces the points up to the clock reading it
                        // ran at: the next is the first after it (docs/contract.md).
                        None => timer.point + ((at - timer.point.min(at)) / period + 1) * period,
                    };
                }
            }
        }
        self.now = self.now.max(target);
        Some(runs)
    }
}

/// What the callbacks see: the runs (timer index, tw_now_ms there), the drops per index,
/// and the wheel.
struct Seen {
    runs: Vec<(usize, i64)>,
    drops: Vec<u32>,
    wheel: *mut tw_wheel,
}

thread_local! {
    static SEEN: RefCell<Seen> = const {
        RefCell::new(Seen { runs: Vec::new(), drops: Vec::new(), wheel: ptr::null_mut() })
    };
}

unsafe extern "C" fn on_fire(_id: tw_timer_id, user_data: *mut c_void) {
    SEEN.with(|s| {
        let mut s = s.borrow_mut();
        // SAFETY: the wheel is live while its callback runs.
        let now = unsafe { tw_now_ms(s.wheel) };
        s.runs.push((user_data as usize - 1, now));
    });
}

unsafe extern "C" fn on_drop(user_data: *mut c_void) {
    SEEN.with(|s| s.borrow_mut().drops[user_data as usize - 1] += 1);
}

fn take_runs() -> Vec<(usize, i64)> {
    SEEN.with(|s| std::mem::take(&mut s.borrow_mut().runs))
}

/// The scenario's world: the wheel under test next to its model.
struct World {
    wheel: *mut tw_wheel,
    model: Model,
}

impl World {
    fn new(scenario: &Scenario) -> World {
        let tick_us = match scenario.tick {
            Tick::Us100 => 100,
            Tick::Us250 => 250,
            Tick::Ms1 => 1_000,
            Tick::S1 => 1_000_000,
        };
        let start_ms = match scenario.start {
            Start::Epoch => 0,
            Start::Recent => 1_764_000_000_000,
            Start::BeforeEpoch => -86_400_000,
        };
        // SAFETY: tw_config is plain numbers; tw_config_init fills every field.
        let mut cfg: tw_config = unsafe { std::mem::zeroed() };
        // SAFETY: `cfg` and `wheel` are locals.
        let mut wheel = ptr::null_mut();
        unsafe {
            tw_config_init(&mut cfg);
            cfg.tick_us = tick_us;
            cfg.clock = tw_clock::TW_CLOCK_VIRTUAL as u32;
            cfg.virtual_start_unix_ms = start_ms;
            assert_eq!(tw_create(&cfg, &mut wheel), tw_status::TW_OK);
        }
        SEEN.with(|s| {
            *s.borrow_mut() = Seen {
                runs: Vec::new(),
                drops: Vec::new(),
                wheel,
            }
        });
        World {
            wheel,
            model: Model {
                tick_ns: u128::from(tick_us) * 1_000,
                start_ms,
                now: 0,
                timers: Vec::new(),
            },
        }
    }

    /// Records an add's outcome; its user data is its index plus one.
    fn accepted(&mut self, status: tw_status, id: tw_timer_id, timer: Timer) {
        assert_eq!(status, tw_status::TW_OK, "add refused: {timer:?}");
        SEEN.with(|s| s.borrow_mut().drops.push(0));
        self.model.timers.push(Timer { id, ..timer });
    }

    fn user_data(&self) -> *mut c_void {
        (self.model.timers.len() + 1) as *mut c_void
    }

    fn timer(&self, point: u128, period: Option<(u128, bool)>) -> Timer {
        Timer {
            id: 0,
            point,
            period,
            grid_next: None,
            pending: true,
        }
    }

    /// Runs one operation; false when the scenario ends here (past the horizon).
    fn run(&mut self, op: Op) -> bool {
        let now = self.model.now;
        let mut id = 0;
        let ud = self.user_data();
        let (cb, drop): (tw_callback, tw_drop_fn) = (Some(on_fire), Some(on_drop));
        // SAFETY (every call below): the wheel is live; `id` and `ran` are locals.
        match op {
            Op::Add(delay) => {
                let status = unsafe { tw_add(self.wheel, delay.ms(), cb, ud, drop, &mut id) };
                let point = now + u128::from(delay.ms()) * NS_PER_MS;
                self.accepted(status, id, self.timer(point, None));
            }
            Op::Periodic {
                delay,
                period,
                fixed_delay,
            } => {
                let mode = period_mode(fixed_delay);
                let status = unsafe {
                    tw_add_periodic(
                        self.wheel.cast(),
                        delay.ms(),
                        period.ms(),
                        mode,
                        cb,
                        ud,
                        drop,
                        &mut id,
                    )
                };
                if period.ms() == 0 {
                    assert_eq!(status, tw_status::TW_ERR_INVALID, "period 0");
                    return true;
                }
                let point = now + u128::from(delay.ms()) * NS_PER_MS;
                let period = u128::from(period.ms()) * NS_PER_MS;
                self.accepted(status, id, self.timer(point, Some((period, fixed_delay))));
            }
            Op::PeriodicAt {
                first,
                period,
                fixed_delay,
                skip,
            } => self.add_periodic_at(first, period.ms(), fixed_delay, skip),
            Op::Reset { pick, delay } => {
                let Some(index) = self.pick(pick) else {
                    return true;
                };
                let timer = &mut self.model.timers[index];
                let status = unsafe { tw_reset(self.wheel, timer.id, delay.ms()) };
                if timer.pending {
                    assert_eq!(status, tw_status::TW_OK, "reset of pending {timer:?}");
                    timer.point = now + u128::from(delay.ms()) * NS_PER_MS;
                    // The reset point replaces a catch-up's: the schedule goes on from it.
                    timer.grid_next = None;
                } else {
                    assert_eq!(status, tw_status::TW_ERR_NOT_FOUND, "reset of ended");
                }
            }
            Op::Delete { pick } => {
                let Some(index) = self.pick(pick) else {
                    return true;
                };
                let timer = &mut self.model.timers[index];
                let status = unsafe { tw_delete(self.wheel, timer.id) };
                let want = if timer.pending {
                    tw_status::TW_OK
                } else {
                    tw_status::TW_ERR_NOT_FOUND
                };
                assert_eq!(status, want, "delete of {timer:?}");
                timer.pending = false;
            }
            Op::Advance(by) => {
                let target = now + u128::from(by.ms()) * NS_PER_MS;
                return self.drive(target, |w, ran| unsafe { tw_advance(w, by.ms(), ran) });
            }
            Op::AdvanceToNext => {
                let Some((_, at)) = self.model.next_run() else {
                    let mut ran = usize::MAX;
                    let status = unsafe { tw_advance_to_next(self.wheel, &mut ran) };
                    assert_eq!((status, ran), (tw_status::TW_OK, 0), "nothing pending");
                    return self.check_clock();
                };
                return self.drive(at, |w, ran| unsafe { tw_advance_to_next(w, ran) });
            }
        }
        true
    }

    fn pick(&self, pick: u8) -> Option<usize> {
        let n = self.model.timers.len();
        (n > 0).then(|| usize::from(pick) % n)
    }

    fn add_periodic_at(&mut self, first: First, period_ms: u64, fixed_delay: bool, skip: bool) {
        let now_ms = self.model.wall_ms(self.model.now);
        let first_ms = match first {
            First::Ahead(d) => now_ms.saturating_add_unsigned(d.ms()),
            First::Behind(d) => now_ms.saturating_sub_unsigned(d.ms()),
            First::Min => i64::MIN,
            First::Max => i64::MAX,
        };
        // TW_MISSED_RUN_ONCE is 0, TW_MISSED_SKIP 1.
        let (mode, missed) = (period_mode(fixed_delay), u32::from(skip));
        let (mut id, ud) = (0, self.user_data());
        // SAFETY: the wheel is live; `id` is a local.
        let status = unsafe {
            tw_add_periodic_at(
                self.wheel.cast(),
                first_ms,
                period_ms,
                mode,
                missed,
                Some(on_fire),
                ud,
                Some(on_drop),
                &mut id,
            )
        };
        if period_ms == 0 {
            assert_eq!(status, tw_status::TW_ERR_INVALID, "period 0");
            return;
        }
        let period = u128::from(period_ms) * NS_PER_MS;
        let now = self.model.now as i128;
        let first = (i128::from(first_ms) - i128::from(self.model.start_ms)) * NS_PER_MS as i128;
        let mut timer = self.timer(first.max(now) as u128, Some((period, fixed_delay)));
        if first < now {
            let late = (now - first) as u128;
            let to_next = (period - late % period) % period;
            if to_next != 0 && skip {
                timer.point += to_next;
            } else if to_next != 0 {
                timer.grid_next = Some(timer.point + to_next);
            }
        }
        self.accepted(status, id, timer);
    }

    /// Makes an advancing call whose model target is `target`, and checks its runs.
    fn drive(
        &mut self,
        target: u128,
        call: impl FnOnce(*mut tw_wheel, *mut usize) -> tw_status,
    ) -> bool {
        let mut ran = usize::MAX;
        if target > HORIZON && !self.model.runs_bounded(target) {
            return true; // too many runs for one input
        }
        if target > HORIZON {
            // Past the model's horizon: the call returns, runs nothing early, and an advance
            // past the clock's range (2^64 ns) is refused without running anything.
            let status = call(self.wheel, &mut ran);
            let runs = take_runs();
            match status {
                tw_status::TW_OK => assert_eq!(ran, runs.len(), "ran vs callbacks seen"),
                tw_status::TW_ERR_INVALID => assert!(runs.is_empty(), "refused, yet ran {runs:?}"),
                other => panic!("an advance past the horizon gave {other:?}"),
            }
            self.check_not_early(&runs);
            return false;
        }
        let mut after = self.model.clone();
        let Some(expected) = after.advance_to(target) else {
            return true; // too many runs for one input
        };
        assert_eq!(call(self.wheel, &mut ran), tw_status::TW_OK);
        let runs = take_runs();
        assert_eq!(ran, runs.len(), "ran vs callbacks seen");
        let times: Vec<i64> = runs.iter().map(|r| r.1).collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "runs out of time order: {runs:?}"
        );
        let (mut got, mut want) = (runs, expected);
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(
            got, want,
            "runs (timer, wall ms) of an advance to {target} ns"
        );
        self.model = after;
        self.check_clock()
    }

    /// Past the horizon: whatever ran did not run before its point.
    fn check_not_early(&self, runs: &[(usize, i64)]) {
        for &(index, at_ms) in runs {
            let timer = &self.model.timers[index];
            let due = self
                .model
                .wall_ms(self.model.fire(timer.point).min(HORIZON * 2));
            assert!(
                at_ms >= due.min(self.model.wall_ms(self.model.now)),
                "{timer:?} ran early at {at_ms}"
            );
        }
    }

    fn check_clock(&self) -> bool {
        // SAFETY: the wheel is live.
        let now_ms = unsafe { tw_now_ms(self.wheel) };
        assert_eq!(now_ms, self.model.wall_ms(self.model.now), "tw_now_ms");
        true
    }

    /// Destroys the wheel: every accepted timer dropped exactly once.
    fn finish(self) {
        // SAFETY: the wheel is live and no call on it is under way.
        assert_eq!(unsafe { tw_destroy(self.wheel) }, tw_status::TW_OK);
        let drops = SEEN.with(|s| std::mem::take(&mut s.borrow_mut().drops));
        for (index, count) in drops.iter().enumerate() {
            assert_eq!(*count, 1, "timer {index} dropped {count} times");
        }
    }
}

/// TW_FIXED_RATE is 0, TW_FIXED_DELAY 1.
fn period_mode(fixed_delay: bool) -> u32 {
    u32::from(fixed_delay)
}

/// Decodes `data` into a scenario and runs it; panics on any disagreement with the model.
pub fn run(data: &[u8]) {
    let Ok(scenario) = Unstructured::new(data).arbitrary::<Scenario>() else {
        return;
    };
    let mut world = World::new(&scenario);
    for &op in scenario.ops.iter().take(MAX_OPS) {
        if !world.run(op) {
            break;
        }
    }
    world.finish();
}

/// The scenario `data` decodes to, for reading a failing input.
#[allow(dead_code)] // used when investigating a finding
pub fn describe(data: &[u8]) -> String {
    format!("{:#?}", Unstructured::new(data).arbitrary::<Scenario>())
}
