//! Model checking (loom) of the races that decide whether a timer is lost, run twice or
//! dropped twice. The shard's real state machine (`ShardState`: insert, expire, start,
//! finish, cancel, reset, close) runs behind a loom mutex, driven by loom threads that play
//! the tick thread, a worker and a caller exactly as `inner.rs` does; loom explores their
//! interleavings. The tick thread's wake protocol is checked on a replica of `ticker.rs`
//! (the real one holds std's `OnceLock<Thread>` and parks with std's `park_timeout`, which
//! loom cannot see).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release -p timerwheel-core --lib loom`
//! (`make test-loom`). `LOOM_MAX_PREEMPTIONS` bounds the search (3 when unset).

use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use super::clock::{Clock, Deadline};
use super::shard::{Schedule, ShardState};
use super::PeriodMode;
use crate::wheel::Key;

/// A tick far enough ahead that every deadline set during a test is due by it, whatever the
/// real clock read when a periodic timer was re-armed.
const LATER: u64 = 1 << 40;

/// Interleavings explored by every test of this file, for the report at the end of each.
static EXPLORED: StdAtomicUsize = StdAtomicUsize::new(0);

/// Runs `body` under loom, counting and printing the interleavings explored.
fn model(name: &str, body: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    let count = std::sync::Arc::new(StdAtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&count);
    builder.check(move || {
        counter.fetch_add(1, Relaxed);
        body();
    });
    let n = count.load(Relaxed);
    let total = EXPLORED.fetch_add(n, Relaxed) + n;
    println!("loom {name}: {n} interleavings (all loom tests so far: {total})");
}

/// Counts a task's runs and its drop.
#[derive(Default)]
struct Tally {
    runs: AtomicUsize,
    drops: AtomicUsize,
}

struct Probe(Arc<Tally>);

impl super::Task for Probe {
    fn run(&mut self, _: super::TimerId) {}
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.drops.fetch_add(1, SeqCst);
    }
}

/// One shard as the runtime holds it, and the clock its periodic timers re-arm on.
struct Shard {
    state: Mutex<ShardState<Probe>>,
    clock: Clock,
}

impl Shard {
    fn new() -> Arc<Self> {
        Arc::new(Shard {
            state: Mutex::new(ShardState::new(usize::MAX, 0)),
            clock: Clock::new(Duration::from_millis(1)),
        })
    }

    fn insert(&self, deadline: u64, schedule: Schedule, tally: &Arc<Tally>) -> Key {
        let probe = Probe(Arc::clone(tally));
        let deadline = Deadline::at_tick(deadline);
        let inserted = self.state.lock().unwrap().insert(deadline, schedule, probe);
        inserted.ok().expect("an open shard takes the timer")
    }

    /// The tick thread's part: expire what is due by `now`, as `Inner::tick` does (the lock
    /// is let go between the halves).
    fn expire(&self, now: u64) -> Vec<Key> {
        let mut due = Vec::new();
        self.state
            .lock()
            .unwrap()
            .expire_due(now, |key, _| due.push(key));
        self.state.lock().unwrap().move_ahead();
        due
    }

    /// A worker's part for one queued key, as `Inner::run_one`: start under the lock, run
    /// and drop outside it. `on_start` sees the state at the moment the run is taken.
    fn run_one(&self, key: Key, on_start: impl FnOnce(&ShardState<Probe>)) -> bool {
        let run = {
            let mut state = self.state.lock().unwrap();
            let run = state.start(key);
            if run.is_some() {
                on_start(&state);
            }
            run
        };
        let Some(run) = run else { return false };
        run.task.0.runs.fetch_add(1, SeqCst);
        let finished = self
            .state
            .lock()
            .unwrap()
            .finish(key, run.task, &self.clock);
        drop(finished); // Err(task): the timer ended, its task drops here, unlocked.
        true
    }

    /// A caller's cancel, as `Inner::cancel`: the task (if handed back) drops unlocked.
    fn cancel(&self, key: Key) -> bool {
        let cancelled = self.state.lock().unwrap().cancel(key);
        cancelled.is_ok()
    }

    fn reset(&self, key: Key, tick: u64) -> bool {
        let reset = self
            .state
            .lock()
            .unwrap()
            .reset(key, Deadline::at_tick(tick));
        reset.is_ok()
    }

    /// Expires what is due by `now` and runs it.
    fn run_out(&self, now: u64) {
        for key in self.expire(now) {
            self.run_one(key, |_| {});
        }
    }

    /// Every timer of the test has ended: each counted once as fired, cancelled or
    /// discarded.
    fn check_all_ended(&self) {
        let counters = self.state.lock().unwrap().counters;
        let ended = counters.fired_one_shot + counters.cancelled + counters.discarded;
        assert_eq!(counters.added, ended, "{counters:?}");
    }
}

/// Spawns `f` on a loom thread with its own handle to the shard.
fn spawn<R: Send + 'static>(
    shard: &Arc<Shard>,
    f: impl FnOnce(&Shard) -> R + Send + 'static,
) -> thread::JoinHandle<R> {
    let shard = Arc::clone(shard);
    thread::spawn(move || f(&shard))
}

/// A one-shot due now; the worker expires and runs it while two callers cancel it. Whoever
/// wins, the callback runs at most once, never after a successful cancel, only one cancel
/// succeeds, and the task drops exactly once.
#[test]
fn loom_cancel_races_fire() {
    model("cancel races fire", || {
        let shard = Shard::new();
        let tally = Arc::new(Tally::default());
        let key = shard.insert(1, Schedule::Once, &tally);
        let worker = spawn(&shard, |shard| shard.run_out(1));
        let other = spawn(&shard, move |shard| shard.cancel(key));
        let cancelled = usize::from(shard.cancel(key));
        worker.join().unwrap();
        let cancelled = cancelled + usize::from(other.join().unwrap());
        let runs = tally.runs.load(SeqCst);
        assert_eq!(runs + cancelled, 1, "ran {runs}, cancelled {cancelled}");
        assert_eq!(tally.drops.load(SeqCst), 1);
        shard.check_all_ended();
    });
}

/// A one-shot due now; the worker expires and runs it while one caller resets it to later
/// and another cancels it. Reset before the run starts: it runs later. After: the reset
/// finds nothing. Once everything due has run: one run or one cancel, and one drop.
#[test]
fn loom_reset_races_fire() {
    model("reset races fire", || {
        let shard = Shard::new();
        let tally = Arc::new(Tally::default());
        let key = shard.insert(1, Schedule::Once, &tally);
        let worker = spawn(&shard, |shard| shard.run_out(1));
        let canceller = spawn(&shard, move |shard| shard.cancel(key));
        let reset = shard.reset(key, 5);
        worker.join().unwrap();
        let cancelled = canceller.join().unwrap();
        if !reset && !cancelled {
            assert_eq!(
                tally.runs.load(SeqCst),
                1,
                "a reset refused: the run had started"
            );
        }
        shard.run_out(5);
        let runs = tally.runs.load(SeqCst);
        assert_eq!(
            runs + usize::from(cancelled),
            1,
            "ran {runs}, cancelled {cancelled}"
        );
        assert_eq!(tally.drops.load(SeqCst), 1);
        shard.check_all_ended();
    });
}

/// A periodic timer fires and re-arms twice on the worker while one caller cancels it and
/// another resets it. The cancel succeeds whatever the worker is doing; no run starts after
/// it; the task drops exactly once, after its last run.
#[test]
fn loom_periodic_rearm_races_cancel() {
    for mode in [PeriodMode::FixedRate, PeriodMode::FixedDelay] {
        model("periodic re-arm races cancel", move || {
            let shard = Shard::new();
            let tally = Arc::new(Tally::default());
            let every = Schedule::Every { period: 1, mode };
            let key = shard.insert(1, every, &tally);
            let cancelled_at = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&cancelled_at);
            let worker = spawn(&shard, move |shard| {
                for round in 0..2 {
                    for key in shard.expire(LATER + round) {
                        shard.run_one(key, |_| {
                            assert!(!flag.load(SeqCst), "a run started after cancel");
                        });
                    }
                }
            });
            let resetter = spawn(&shard, move |shard| {
                shard.reset(key, LATER);
            });
            let cancelled = {
                let mut state = shard.state.lock().unwrap();
                let cancelled = state.cancel(key);
                cancelled_at.store(true, SeqCst);
                cancelled
            };
            let cancelled = cancelled.expect("a live periodic timer is always cancellable");
            drop(cancelled); // the task if it was not running: dropped unlocked
            worker.join().unwrap();
            resetter.join().unwrap();
            assert!(tally.runs.load(SeqCst) <= 2);
            assert_eq!(tally.drops.load(SeqCst), 1);
            assert!(!shard.state.lock().unwrap().is_live(key));
            shard.check_all_ended();
        });
    }
}

/// Shutdown closes the shard while a caller adds: the add is either refused (the task comes
/// back undropped) or accepted and then discarded by the close. Nothing is lost or dropped
/// twice, and the shard takes nothing after the close.
#[test]
fn loom_close_races_add() {
    model("close races add", || {
        let shard = Shard::new();
        let (pending, adding) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
        shard.insert(1_000, Schedule::Once, &pending);
        let closer = {
            let shard = Arc::clone(&shard);
            thread::spawn(move || {
                let tasks = shard.state.lock().unwrap().close();
                let discarded = tasks.len();
                drop(tasks);
                discarded
            })
        };
        let probe = Probe(Arc::clone(&adding));
        let added = shard
            .state
            .lock()
            .unwrap()
            .insert(Deadline::at_tick(1), Schedule::Once, probe);
        let refused = match added {
            Ok(_) => 0,
            Err((error, task)) => {
                assert_eq!(error, super::Error::Shutdown);
                assert_eq!(adding.drops.load(SeqCst), 0, "a refused task was dropped");
                drop(task);
                1
            }
        };
        let discarded = closer.join().unwrap();
        assert_eq!(
            discarded + refused,
            2,
            "discarded {discarded}, refused {refused}"
        );
        assert_eq!(pending.drops.load(SeqCst), 1);
        assert_eq!(adding.drops.load(SeqCst), 1);
        assert_eq!(pending.runs.load(SeqCst) + adding.runs.load(SeqCst), 0);
        shard.check_all_ended();
    });
}

/// Shutdown closes the shard while a worker runs a periodic timer (a runtime dropped from
/// a callback does not wait for the runs): the run ends the timer when it returns, the task
/// drops exactly once, and the timer counts as discarded.
#[test]
fn loom_close_races_a_periodic_run() {
    model("close races a periodic run", || {
        let shard = Shard::new();
        let tally = Arc::new(Tally::default());
        let every = Schedule::Every {
            period: 1,
            mode: PeriodMode::FixedRate,
        };
        shard.insert(1, every, &tally);
        let worker = spawn(&shard, |shard| {
            for round in 0..2 {
                for key in shard.expire(LATER + round) {
                    shard.run_one(key, |_| {});
                }
            }
        });
        let tasks = shard.state.lock().unwrap().close();
        drop(tasks);
        worker.join().unwrap();
        assert_eq!(tally.drops.load(SeqCst), 1);
        shard.check_all_ended();
    });
}

/// The deadline the tick thread first sleeps until, later than every deadline added.
const FAR: u64 = 100;

/// A replica of `ticker.rs`: `wake_at` is the tick the thread sleeps until (`u64::MAX` while
/// it scans); an add earlier than that unparks it. Kept line for line with the original
/// except for the loom types and the sleep (see `sleep`).
struct Ticker {
    wake_at: AtomicU64,
    thread: Mutex<Option<thread::Thread>>,
}

impl Ticker {
    fn notify_if_earlier(&self, deadline: u64) {
        if deadline < self.wake_at.load(SeqCst) {
            if let Some(thread) = self.thread.lock().unwrap().as_ref() {
                thread.unpark();
            }
        }
    }

    fn begin_scan(&self) {
        self.wake_at.store(u64::MAX, SeqCst);
    }

    /// Sleeps until `tick`. A sleep to [`FAR`] parks until unparked: woken only by its
    /// timeout it would be too late for the deadlines added meanwhile. A shorter one ends
    /// in time on its own (its timeout comes before any deadline it could miss).
    fn sleep(&self, tick: Option<u64>) {
        let tick = tick.unwrap_or(u64::MAX - 1);
        self.wake_at.store(tick, SeqCst);
        if tick >= FAR {
            thread::park();
        } else {
            thread::yield_now();
        }
    }
}

/// The tick thread sleeps until a far deadline; two other threads add earlier timers. In
/// every interleaving the tick thread wakes until a scan has seen both (a lost wake-up
/// leaves it parked forever, which loom reports as a deadlock).
#[test]
fn loom_an_add_racing_the_scan_wakes_the_tick_thread() {
    model("add races the tick thread's scan", || {
        // The wheel, reduced to what the tick thread reads: the deadlines it holds.
        let wheel = Arc::new(Mutex::new(vec![FAR]));
        let ticker = Arc::new(Ticker {
            wake_at: AtomicU64::new(0),
            thread: Mutex::new(None),
        });
        let tick_thread = {
            let (wheel, ticker) = (Arc::clone(&wheel), Arc::clone(&ticker));
            thread::spawn(move || loop {
                ticker.begin_scan();
                let deadlines = wheel.lock().unwrap().clone();
                if deadlines.len() == 3 {
                    return;
                }
                ticker.sleep(deadlines.into_iter().min());
            })
        };
        *ticker.thread.lock().unwrap() = Some(tick_thread.thread().clone());
        let add = |deadline| {
            let (wheel, ticker) = (Arc::clone(&wheel), Arc::clone(&ticker));
            move || {
                wheel.lock().unwrap().push(deadline);
                ticker.notify_if_earlier(deadline);
            }
        };
        let other = thread::spawn(add(7));
        add(5)();
        other.join().unwrap();
        tick_thread.join().unwrap();
    });
}
