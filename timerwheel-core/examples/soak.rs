//! Soak: a million live timers under random add / cancel / reset from several threads, with
//! periodic timers of both modes and callbacks that panic, block for 100 ms, cancel or reset
//! themselves or others, or add more timers. At the end every timer must be accounted for
//! exactly once and every task dropped exactly once; the process exits non-zero otherwise.
//!
//! `cargo run --release -p timerwheel-core --example soak -- [seconds]` (default 60).

use std::cell::Cell;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use timerwheel_core::{Config, Error, PeriodMode, Rejected, Runtime, Stats, Task, TimerId};

/// Timers kept alive at once.
const LIVE_TARGET: u64 = 1_000_000;
/// Periodic timers started before the churn begins.
const PERIODIC_START: u64 = 2_000;
/// Threads doing random operations.
const MUTATORS: u64 = 3;
/// A mutator pauses briefly after this many operations.
const PAUSE_EVERY: u64 = 200;
/// Ids remembered for cancel and reset (a ring of the latest adds).
const REGISTRY: usize = 1 << 21;
/// The longest one-shot delay, in milliseconds.
const MAX_DELAY_MS: u64 = 20_000;
/// A callback's message when it panics on purpose.
const DELIBERATE: &str = "soak: deliberate panic";

type Rt = Runtime<SoakTask>;

/// Everything the soak counts on its side, to compare with the runtime's stats.
struct Tally {
    accepted: AtomicU64,
    drops: AtomicU64,
    one_shot_runs: AtomicU64,
    periodic_runs: AtomicU64,
    double_runs: AtomicU64,
    cancelled: AtomicU64,
    panics: AtomicU64,
    blocks: AtomicU64,
    ops: AtomicU64,
    runs_after_shutdown: AtomicU64,
}

static TALLY: Tally = Tally {
    accepted: AtomicU64::new(0),
    drops: AtomicU64::new(0),
    one_shot_runs: AtomicU64::new(0),
    periodic_runs: AtomicU64::new(0),
    double_runs: AtomicU64::new(0),
    cancelled: AtomicU64::new(0),
    panics: AtomicU64::new(0),
    blocks: AtomicU64::new(0),
    ops: AtomicU64::new(0),
    runs_after_shutdown: AtomicU64::new(0),
};

/// Set once `shutdown` has returned: no callback may start after that.
static SHUT_DOWN: AtomicBool = AtomicBool::new(false);
/// The runtime, for callbacks; dropped at the end to measure the memory given back.
static RUNTIME: OnceLock<Weak<Rt>> = OnceLock::new();
/// The latest ids added, for random cancel and reset.
static IDS: OnceLock<Box<[AtomicU64]>> = OnceLock::new();

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Relaxed)
}

/// A timer's task: counts its runs and its drop. A task handed back by a refused add is
/// disarmed, so only the runtime's drops count.
struct SoakTask {
    periodic: bool,
    ran: bool,
    armed: bool,
}

impl Task for SoakTask {
    fn run(&mut self, id: TimerId) {
        if SHUT_DOWN.load(Relaxed) {
            bump(&TALLY.runs_after_shutdown);
        }
        if self.periodic {
            bump(&TALLY.periodic_runs);
        } else {
            if self.ran {
                bump(&TALLY.double_runs);
            }
            self.ran = true;
            bump(&TALLY.one_shot_runs);
        }
        act(id);
    }
}

impl Drop for SoakTask {
    fn drop(&mut self) {
        if self.armed {
            bump(&TALLY.drops);
        }
    }
}

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    NEXT.fetch_add(0x6A09_E667_F3BC_C909, Relaxed) | 1
}

/// A xorshift step: fast, good enough to pick operations.
fn rand() -> u64 {
    RNG.with(|rng| {
        let mut x = rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rng.set(x);
        x
    })
}

fn remember(id: TimerId) {
    let ids = IDS.get().expect("registry set up");
    ids[rand() as usize % ids.len()].store(id.as_u64(), Relaxed);
}

fn some_id() -> Option<TimerId> {
    let ids = IDS.get().expect("registry set up");
    TimerId::from_u64(ids[rand() as usize % ids.len()].load(Relaxed))
}

fn counted(result: Result<(), Error>) {
    bump(&TALLY.ops);
    if result.is_ok() {
        bump(&TALLY.cancelled);
    }
}

fn delay() -> Duration {
    Duration::from_millis(1 + rand() % MAX_DELAY_MS)
}

fn accepted(added: Result<TimerId, Rejected<SoakTask>>) -> Option<TimerId> {
    bump(&TALLY.ops);
    match added {
        Ok(id) => {
            bump(&TALLY.accepted);
            remember(id);
            Some(id)
        }
        Err(mut rejected) => {
            rejected.task.armed = false;
            None
        }
    }
}

fn task(periodic: bool) -> SoakTask {
    SoakTask {
        periodic,
        ran: false,
        armed: true,
    }
}

fn add_one_shot(rt: &Rt) {
    accepted(rt.add(delay(), task(false)));
}

fn add_periodic(rt: &Rt) {
    let r = rand();
    let period = Duration::from_millis(10 + r % 1_000);
    let mode = match r % 2 {
        0 => PeriodMode::FixedRate,
        _ => PeriodMode::FixedDelay,
    };
    accepted(rt.add_periodic(period, period, mode, task(true)));
}

/// What a callback does besides counting: mostly nothing.
fn act(id: TimerId) {
    let Some(rt) = RUNTIME.get().and_then(Weak::upgrade) else {
        return;
    };
    match rand() % 100_000 {
        0..2 => {
            bump(&TALLY.blocks);
            thread::sleep(Duration::from_millis(100));
        }
        2..12 => {
            bump(&TALLY.panics);
            std::panic::panic_any(DELIBERATE);
        }
        12..1_000 => counted(rt.cancel(id)),
        1_000..2_000 => bump_op(rt.reset(id, delay())),
        2_000..4_000 => some_id()
            .into_iter()
            .for_each(|other| counted(rt.cancel(other))),
        4_000..6_000 => some_id()
            .into_iter()
            .for_each(|other| bump_op(rt.reset(other, delay()))),
        6_000..8_000 => add_one_shot(&rt),
        8_000..8_010 => add_periodic(&rt),
        _ => {}
    }
}

fn bump_op<R>(_: R) {
    bump(&TALLY.ops);
}

fn live_estimate() -> u64 {
    let ended = get(&TALLY.one_shot_runs) + get(&TALLY.cancelled);
    get(&TALLY.accepted).saturating_sub(ended)
}

/// One mutator thread: keeps the population near its target and churns it.
fn mutate(rt: Arc<Rt>, stop: Arc<AtomicBool>) {
    for op in 0u64.. {
        if stop.load(Relaxed) {
            break;
        }
        if op % PAUSE_EVERY == 0 {
            // Leave the tick thread and the workers some of the machine.
            thread::sleep(Duration::from_micros(50));
        }
        if live_estimate() < LIVE_TARGET {
            match rand() % 1_000 {
                0..10 => add_periodic(&rt),
                _ => add_one_shot(&rt),
            }
            continue;
        }
        let Some(id) = some_id() else { continue };
        match rand() % 1_000 {
            0..400 => counted(rt.cancel(id)),
            400..402 => counted(rt.cancel_sync(id)),
            402..410 => bump_op(rt.is_pending(id)),
            _ => bump_op(rt.reset(id, delay())),
        }
    }
}

/// Resident and peak resident memory of the process in kB, from /proc.
fn rss_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn silence_deliberate_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&DELIBERATE) {
            default(info);
        }
    }));
}

fn seconds_from_args() -> u64 {
    std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
}

/// Fills the wheel, churns it for `seconds`, stops the mutators; the stats before shutdown.
fn run(rt: &Arc<Rt>, seconds: u64) -> Stats {
    for _ in 0..PERIODIC_START {
        add_periodic(rt);
    }
    while live_estimate() < LIVE_TARGET {
        add_one_shot(rt);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mutators: Vec<_> = (0..MUTATORS)
        .map(|_| {
            let (rt, stop) = (Arc::clone(rt), Arc::clone(&stop));
            thread::spawn(move || mutate(rt, stop))
        })
        .collect();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(seconds) {
        thread::sleep(Duration::from_secs(1));
        let s = rt.stats();
        println!(
            "t={:>3}s pending={} fired={} workers={} queue={} late_p99={}us",
            start.elapsed().as_secs(),
            s.pending,
            s.fired,
            s.workers,
            s.queue_depth,
            s.late_p99_us
        );
    }
    stop.store(true, Relaxed);
    for m in mutators {
        m.join().expect("a mutator panicked");
    }
    let s = rt.stats();
    println!(
        "stopped: pending={} late_p99={}us late_max={}us",
        s.pending, s.late_p99_us, s.late_max_us
    );
    s
}

/// The checks: each failure is a line of the returned list.
fn check(after: &Stats, discarded: usize) -> Vec<String> {
    let mut failures = Vec::new();
    let mut expect = |what: &str, got: u64, want: u64| {
        if got != want {
            failures.push(format!("{what}: {got} != {want}"));
        }
    };
    let accepted = get(&TALLY.accepted);
    expect("stats.added vs adds accepted", after.added, accepted);
    expect(
        "stats.fired_one_shot vs one-shot runs",
        after.fired_one_shot,
        get(&TALLY.one_shot_runs),
    );
    expect(
        "stats.cancelled vs cancels that returned Ok",
        after.cancelled,
        get(&TALLY.cancelled),
    );
    expect(
        "stats.discarded vs shutdown's count",
        after.discarded,
        discarded as u64,
    );
    expect(
        "added vs fired_one_shot + cancelled + discarded",
        accepted,
        after.fired_one_shot + after.cancelled + after.discarded,
    );
    expect("pending after shutdown", after.pending, 0);
    expect("drops vs adds accepted", get(&TALLY.drops), accepted);
    expect("one-shots run twice", get(&TALLY.double_runs), 0);
    expect(
        "callbacks started after shutdown returned",
        get(&TALLY.runs_after_shutdown),
        0,
    );
    expect(
        "callback_panics vs deliberate panics",
        after.callback_panics,
        get(&TALLY.panics),
    );
    failures
}

/// Memory given back: once the runtime is gone, RSS is within a quarter of the growth (plus
/// allocator slack) of where it started.
fn check_memory(before: u64, peak: u64, after: u64) -> Option<String> {
    let allowed = before + peak.saturating_sub(before) / 4 + 8 * 1024;
    (after > allowed)
        .then(|| format!("RSS after {after} kB > {allowed} kB (before {before}, peak {peak})"))
}

fn main() -> ExitCode {
    let seconds = seconds_from_args();
    silence_deliberate_panics();
    let ids: Box<[AtomicU64]> = (0..REGISTRY).map(|_| AtomicU64::new(0)).collect();
    let _ = IDS.set(ids);
    // The registry is touched once so that the baseline includes it.
    IDS.get()
        .into_iter()
        .flatten()
        .for_each(|id| id.store(0, Relaxed));
    let (rss_before, _) = rss_kb();
    let config = Config {
        min_workers: 2,
        max_workers: 8,
        ..Config::default()
    };
    let rt = Arc::new(Rt::new(config).expect("runtime"));
    let _ = RUNTIME.set(Arc::downgrade(&rt));
    println!("soak: {LIVE_TARGET} live timers, {MUTATORS} mutator threads, {seconds} s");
    let started = Instant::now();
    let before = run(&rt, seconds);
    let discarded = rt.shutdown().expect("first shutdown");
    SHUT_DOWN.store(true, Relaxed);
    thread::sleep(Duration::from_millis(200));
    let after = rt.stats();
    let (rss_shut, rss_peak) = rss_kb();
    drop(rt);
    let (rss_after, _) = rss_kb();
    let mut failures = check(&after, discarded);
    failures.extend(check_memory(rss_before, rss_peak, rss_after));
    report(
        &before,
        &after,
        started.elapsed(),
        [rss_before, rss_peak, rss_shut, rss_after],
    );
    if failures.is_empty() {
        println!("soak: PASS (lost = 0)");
        ExitCode::SUCCESS
    } else {
        failures.iter().for_each(|f| println!("soak: FAIL {f}"));
        ExitCode::FAILURE
    }
}

fn report(before: &Stats, after: &Stats, elapsed: Duration, rss: [u64; 4]) {
    let [rss_before, rss_peak, rss_shut, rss_after] = rss;
    let mb = |kb: u64| kb as f64 / 1024.0;
    println!("elapsed            {:.1} s", elapsed.as_secs_f64());
    println!("ops                {}", get(&TALLY.ops));
    println!("timers added       {}", after.added);
    println!("  fired one-shot   {}", after.fired_one_shot);
    println!("  cancelled        {}", after.cancelled);
    println!("  discarded        {}", after.discarded);
    println!(
        "  lost             {}",
        after.added.saturating_sub(get(&TALLY.drops))
    );
    println!("periodic runs      {}", get(&TALLY.periodic_runs));
    println!(
        "panics / blocks    {} / {}",
        after.callback_panics,
        get(&TALLY.blocks)
    );
    println!("workers peak       {}", after.workers_peak);
    println!(
        "lateness p50/p99/max {} / {} / {} us",
        before.late_p50_us, before.late_p99_us, before.late_max_us
    );
    println!(
        "RSS before {:.1} MB, peak {:.1} MB, after shutdown {:.1} MB, after drop {:.1} MB",
        mb(rss_before),
        mb(rss_peak),
        mb(rss_shut),
        mb(rss_after)
    );
}
