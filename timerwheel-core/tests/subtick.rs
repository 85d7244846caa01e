//! Dispatch at the exact deadline within a tick: a timer runs at its exact deadline, never
//! before, normally well within the tick rather than at its end; and a timer the tick thread
//! holds until its exact deadline behaves like any expired timer not yet started (cancel,
//! reset, export). Bounds are generous: the machine may be loaded.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use timerwheel_core::{BoxTask, Config, PeriodMode, Runtime};

const PATIENCE: Duration = Duration::from_secs(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// A runtime with threads and its ticks as seen from the test: the runtime's clock starts
/// when it is built, a little after `origin`, so `at(k, into)` lies about `into` after the
/// start of its tick `k`.
struct Grid {
    origin: Instant,
    tick: Duration,
    rt: Runtime<BoxTask>,
}

impl Grid {
    fn new(tick: Duration, max_workers: usize) -> Self {
        let origin = Instant::now();
        let config = Config {
            tick,
            min_workers: max_workers.min(1),
            max_workers,
            ..Config::default()
        };
        let rt = Runtime::new(config).unwrap();
        Grid { origin, tick, rt }
    }

    fn at(&self, tick: u32, into: Duration) -> Instant {
        self.origin + self.tick * tick + into
    }

    /// The first tick at least `lead` from now, `into` after its start.
    fn next(&self, lead: Duration, into: Duration) -> Instant {
        let from_origin = (Instant::now() + lead).duration_since(self.origin);
        let tick = from_origin.as_nanos().div_ceil(self.tick.as_nanos()) as u32;
        self.at(tick, into)
    }
}

fn sleep_until(when: Instant) {
    thread::sleep(when.saturating_duration_since(Instant::now()));
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        thread::sleep(ms(1));
    }
}

/// A task that sends the instant it ran.
fn report_run(tx: &mpsc::Sender<Instant>) -> BoxTask {
    let tx = tx.clone();
    Box::new(move |_| tx.send(Instant::now()).unwrap())
}

/// On a 10 ms tick, 160 timers due 3 to 4.5 ms into their ticks: rounded up to the tick,
/// each would wait 5.5 to 7 ms; at its exact deadline, far less. The median lateness, not
/// the mean: on a loaded machine a stall of the workers makes a few runs late by tens of
/// milliseconds, and the mean came to 7.3 ms with the runs dispatched within their ticks.
#[test]
fn timers_due_within_a_tick_run_at_their_exact_deadline_not_the_tick_end() {
    let grid = Grid::new(ms(10), 2);
    let (tx, rx) = mpsc::channel();
    let mut due = Vec::new();
    for n in 0..160u32 {
        let at = grid.at(3 + n / 16, ms(3) + us(100) * (n % 16));
        let delay = at.saturating_duration_since(Instant::now());
        // Read before the add: the runtime's own deadline is no earlier.
        due.push(Instant::now() + delay);
        let tx = tx.clone();
        let task: BoxTask = Box::new(move |_| tx.send((n, Instant::now())).unwrap());
        grid.rt.add(delay, task).ok().unwrap();
    }
    let mut late = Vec::new();
    for _ in 0..due.len() {
        let (n, ran_at) = rx.recv_timeout(PATIENCE).expect("every timer runs");
        let due = due[n as usize];
        assert!(ran_at >= due, "timer {n} ran {:?} early", due - ran_at);
        late.push(ran_at - due);
    }
    late.sort();
    let median = late[late.len() / 2];
    assert!(
        median < grid.tick / 2,
        "median lateness {median:?}: not dispatched within the tick"
    );
}

/// The guarantee: no run starts before its delay has passed, also when a timer is reset
/// (earlier or later) just after its add, maybe while the tick thread holds it or while it
/// waits for a worker.
#[test]
fn no_run_starts_before_its_delay_has_passed() {
    const TIMERS: u64 = 3000;
    let rt: Runtime<BoxTask> = Runtime::new(Config::default()).unwrap();
    let start = Instant::now();
    let since_start = move || start.elapsed().as_nanos() as u64;
    let (early, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut random_delay = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        us(seed % 20_000)
    };
    for n in 0..TIMERS {
        // The earliest time it may run, in nanoseconds since `start`: never above the truth.
        let earliest = Arc::new(AtomicU64::new(0));
        let (check, early, ran) = (Arc::clone(&earliest), early.clone(), ran.clone());
        let task: BoxTask = Box::new(move |_| {
            if since_start() < check.load(SeqCst) {
                early.fetch_add(1, SeqCst);
            }
            ran.fetch_add(1, SeqCst);
        });
        let delay = random_delay();
        earliest.store(since_start() + delay.as_nanos() as u64, SeqCst);
        let id = rt.add(delay, task).ok().unwrap();
        if n % 3 == 0 {
            let delay = random_delay();
            let new_earliest = since_start() + delay.as_nanos() as u64;
            earliest.fetch_min(new_earliest, SeqCst);
            if rt.reset(id, delay).is_ok() {
                earliest.store(new_earliest, SeqCst);
            }
        }
    }
    wait_until("every timer ran", || ran.load(SeqCst) == TIMERS as usize);
    assert_eq!(early.load(SeqCst), 0, "runs started before their deadline");
}

/// The only worker is busy; a due timer waits for it in the run queue and is reset to a
/// deadline 90 ms into a later 100 ms tick. The tick thread expires it again at that tick's
/// start and holds it; the worker, freed 45 ms before the new deadline, finds the old queue
/// entry and must not start the timer with it.
#[test]
fn a_timer_reset_while_queued_waits_for_its_new_deadline() {
    let grid = Grid::new(ms(100), 1);
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let blocker: BoxTask = Box::new(move |_| {
        started_tx.send(()).unwrap();
        release_rx.recv_timeout(PATIENCE).unwrap();
    });
    grid.rt.add(Duration::ZERO, blocker).ok().unwrap();
    started_rx.recv_timeout(PATIENCE).unwrap();
    let (ran_tx, ran_rx) = mpsc::channel();
    let timer = grid
        .rt
        .add(Duration::ZERO, report_run(&ran_tx))
        .ok()
        .unwrap();
    wait_until("the timer is queued", || grid.rt.stats().queue_depth == 1);
    let target = grid.next(ms(150), ms(90));
    let asked = Instant::now();
    let delay = target - asked;
    grid.rt.reset(timer, delay).unwrap();
    sleep_until(target - ms(45));
    release_tx.send(()).unwrap();
    let ran_at = ran_rx.recv_timeout(PATIENCE).expect("the timer runs");
    assert!(
        ran_at >= asked + delay,
        "ran {:?} before its new deadline",
        asked + delay - ran_at
    );
}

/// Three timers due 90 ms into a 100 ms tick, looked at 45 ms before: the tick thread holds
/// them. Export sees them; one is cancelled (Ok, it never runs, it is dropped once), one is
/// reset (it runs at its new deadline), the third runs at its own.
#[test]
fn a_held_timer_is_exported_cancelled_and_reset_like_a_pending_one() {
    let grid = Grid::new(ms(100), 1);
    let target = grid.next(ms(150), ms(90));
    let (tx, rx) = mpsc::channel();
    let drops = Arc::new(Mutex::new(Vec::new()));
    let ids: Vec<_> = ["cancelled", "reset", "kept"]
        .into_iter()
        .map(|name| {
            let (tx, on_drop) = (tx.clone(), DropLog(name, Arc::clone(&drops)));
            let task: BoxTask = Box::new(move |_| {
                let _ = &on_drop;
                tx.send((name, Instant::now())).unwrap();
            });
            let delay = target.saturating_duration_since(Instant::now());
            grid.rt.add(delay, task).ok().unwrap()
        })
        .collect();
    sleep_until(target - ms(45));
    let mut exported = Vec::new();
    let export = grid
        .rt
        .export(|_| (), |timer, ()| exported.push(timer.id))
        .unwrap();
    assert_eq!((export.timers, exported.len()), (3, 3));
    assert!(ids.iter().all(|id| exported.contains(id)));
    grid.rt.cancel(ids[0]).expect("a held timer is cancelled");
    let reset_at = Instant::now();
    grid.rt
        .reset(ids[1], ms(150))
        .expect("a held timer is reset");
    let mut runs = Vec::new();
    for _ in 0..2 {
        runs.push(rx.recv_timeout(PATIENCE).expect("two runs"));
    }
    let names: Vec<_> = runs.iter().map(|&(name, _)| name).collect();
    assert_eq!(names, ["kept", "reset"]);
    assert!(runs[0].1 >= target && runs[1].1 >= reset_at + ms(150));
    assert!(rx.recv_timeout(ms(300)).is_err(), "the cancelled timer ran");
    wait_until("three drops", || drops.lock().unwrap().len() == 3);
    let mut dropped = drops.lock().unwrap().clone();
    dropped.sort_unstable();
    assert_eq!(dropped, ["cancelled", "kept", "reset"]);
}

/// Logs its name when dropped.
struct DropLog(&'static str, Arc<Mutex<Vec<&'static str>>>);

impl Drop for DropLog {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(self.0);
    }
}

/// On a 1 s tick, a fixed-rate timer every 20 ms: the tick thread's wake-ups for held
/// timers are spaced by at most a millisecond, not an eighth of the tick (125 ms), which
/// would fold most of the points into back-to-back pairs.
#[test]
fn a_period_much_shorter_than_the_tick_keeps_its_points() {
    let grid = Grid::new(ms(1000), 2);
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let task: BoxTask = Box::new(move |_| {
        counted.fetch_add(1, SeqCst);
    });
    let rate = PeriodMode::FixedRate;
    grid.rt
        .add_periodic(ms(20), ms(20), rate, task)
        .ok()
        .unwrap();
    thread::sleep(ms(1000));
    let runs = runs.load(SeqCst);
    // 50 points passed; a busy machine may fold a few (each run is at most 20 ms late
    // before the next point folds into it). Folded by the gap, about 16 would run.
    assert!(runs >= 40, "{runs} runs of 50 points");
}
