//! Model checking (loom) of the runtime's own code: built with `--cfg loom`, its locks,
//! condition variables, atomics, threads and parking come from loom (`sync.rs`), so the
//! real shard, executor, tick thread, workers and run path run here, on loom threads that
//! loom interleaves in every way (up to `LOOM_MAX_PREEMPTIONS` preemptions, 3 when unset).
//! A lost wake-up leaves a thread parked for good, which loom reports as a deadlock.
//!
//! The roles: a manual runtime's `poll` (the tick thread's step and a run loop on one
//! thread), or [`advance_time`] on the model's thread with real workers
//! ([`spawn_worker`]) taking the runs, or a threaded runtime's own tick thread and workers.
//! Model time stands still unless a model moves it (`sync::time::advance`): a timer added
//! with no delay is due at once; any other is not due until time moves.
//!
//! Run: `make test-loom` (`RUSTFLAGS="--cfg loom" cargo test --release -p timerwheel-core
//! --lib loom`).
//!
//! [`advance_time`]: super::ticker::advance_time

use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

use super::sync::{self, time::advance};
use super::ticker::advance_time;
use super::worker::spawn_worker;
use super::{Builder, Error, PeriodMode, Rejected, Runtime, Task, TimerId};

/// The runtime's tick in these models (the default).
const TICK: Duration = Duration::from_millis(1);

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

/// A count of events one thread waits for: it parks until the count reaches zero (parks
/// through the runtime's `sync`, whose park token loom does not lose).
struct Latch {
    left: AtomicUsize,
    waiter: sync::thread::Thread,
}

impl Latch {
    /// A latch of `count` events, waited for by the calling thread.
    fn new(count: usize) -> Arc<Self> {
        Arc::new(Latch {
            left: AtomicUsize::new(count),
            waiter: sync::thread::current(),
        })
    }

    fn count_down(&self) {
        self.left.fetch_sub(1, SeqCst);
        self.waiter.unpark();
    }

    fn wait(&self) {
        while self.left.load(SeqCst) > 0 {
            sync::thread::park();
        }
    }
}

/// What one timer's task went through.
#[derive(Default)]
struct Tally {
    runs: AtomicUsize,
    /// Counted when the drop has returned.
    drops: AtomicUsize,
    /// Set once the contract allows no more runs or drops (`cancel_sync` returned, the
    /// release hook ran).
    stopped: AtomicBool,
    /// A check of the probe failed.
    broken: AtomicBool,
}

impl Tally {
    /// Records a failed check. Not a panic: the runtime would catch it and skip the rest
    /// of the run or drop.
    fn check(&self, ok: bool, what: &str) {
        if !ok {
            eprintln!("broken guarantee: {what}");
            self.broken.store(true, SeqCst);
        }
    }
}

type Action = Box<dyn FnOnce() + Send>;

/// A timer's task: counts its runs and its drop and checks that no run comes after the
/// timer was stopped or dropped, and no drop after it was stopped; every model ends with
/// [`check_ended`].
struct Probe {
    tally: Arc<Tally>,
    on_run: Option<Action>,
    on_drop: Option<Action>,
    /// Counted down when the drop has returned.
    dropped: Option<Arc<Latch>>,
    /// Claims a drop that does nothing, as a C task without a drop function does: a
    /// one-shot of it is cancelled without the shard's lock (`shard_lock.rs`).
    trivial: bool,
}

impl Probe {
    fn new(tally: &Arc<Tally>) -> Self {
        Probe {
            tally: Arc::clone(tally),
            on_run: None,
            on_drop: None,
            dropped: None,
            trivial: false,
        }
    }

    fn trivial(mut self) -> Self {
        self.trivial = true;
        self
    }

    /// Runs `action` at the first run.
    fn on_run(mut self, action: impl FnOnce() + Send + 'static) -> Self {
        self.on_run = Some(Box::new(action));
        self
    }

    /// Runs `action` at the drop, before the drop counts.
    fn on_drop(mut self, action: impl FnOnce() + Send + 'static) -> Self {
        self.on_drop = Some(Box::new(action));
        self
    }

    fn count_drop_on(mut self, latch: &Arc<Latch>) -> Self {
        self.dropped = Some(Arc::clone(latch));
        self
    }
}

impl Task for Probe {
    const CANCEL_WITHOUT_LOCK: bool = true;

    fn run(&mut self, _: TimerId) {
        let tally = &self.tally;
        tally.check(
            !tally.stopped.load(SeqCst),
            "a run after the timer was stopped",
        );
        tally.check(tally.drops.load(SeqCst) == 0, "a run after the drop");
        tally.runs.fetch_add(1, SeqCst);
        if let Some(action) = self.on_run.take() {
            action();
        }
    }

    fn drop_is_trivial(&self) -> bool {
        self.trivial
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let tally = &self.tally;
        tally.check(
            !tally.stopped.load(SeqCst),
            "a drop after the timer was stopped",
        );
        if let Some(action) = self.on_drop.take() {
            action();
        }
        self.tally.drops.fetch_add(1, SeqCst);
        if let Some(latch) = self.dropped.take() {
            latch.count_down();
        }
    }
}

/// A runtime that starts no thread: the model plays the tick thread and the workers.
fn manual() -> Arc<Runtime<Probe>> {
    Arc::new(Builder::new().manual(true).build().unwrap())
}

/// A manual runtime with `workers` real worker threads taking its runs (counted by its
/// executor as the runtime counts its own); they exit at its shutdown.
fn manual_with_workers(workers: usize) -> Arc<Runtime<Probe>> {
    let config = Builder::new()
        .manual(true)
        .min_workers(workers)
        .max_workers(workers);
    let runtime = Arc::new(config.build().unwrap());
    for _ in 0..runtime.inner.executor.reserve_initial() {
        spawn_worker(&runtime.inner);
    }
    runtime
}

/// A timer due now (periodic: every tick) running `probe`.
fn add_now(runtime: &Runtime<Probe>, periodic: bool, probe: Probe) -> TimerId {
    let added = if periodic {
        runtime.add_periodic(Duration::ZERO, TICK, PeriodMode::FixedRate, probe)
    } else {
        runtime.add(Duration::ZERO, probe)
    };
    accepted(added)
}

/// The id of a timer the runtime took.
fn accepted(added: Result<TimerId, Rejected<Probe>>) -> TimerId {
    let Ok(id) = added else {
        panic!("an open runtime takes the timer");
    };
    id
}

/// Spawns `f` on a loom thread with its own handle to the runtime.
fn spawn<R: 'static>(
    runtime: &Arc<Runtime<Probe>>,
    f: impl FnOnce(&Runtime<Probe>) -> R + 'static,
) -> thread::JoinHandle<R> {
    let runtime = Arc::clone(runtime);
    thread::spawn(move || f(&runtime))
}

/// After every timer of the model has ended: each was dropped exactly once, no check of a
/// probe failed, and the counters account for every timer.
fn check_ended(runtime: &Runtime<Probe>, tallies: &[&Tally]) {
    // First: holding the shards' locks, it removes (and drops) what was cancelled without.
    let stats = runtime.stats();
    for tally in tallies {
        assert!(
            !tally.broken.load(SeqCst),
            "a probe's check failed (see above)"
        );
        assert_eq!(
            tally.drops.load(SeqCst),
            1,
            "a task not dropped exactly once"
        );
    }
    assert_eq!(stats.callback_panics, 0);
    assert_eq!(stats.pending, 0, "the counters lost a timer: {stats:?}");
}

/// A timer due now; one thread polls twice (time moves a tick in between, so a periodic
/// timer is due again) while another re-arms it to run now and a third stops it with
/// `cancel_sync`. Whatever the race, `cancel_sync` returns after the drop has returned and
/// no run starts after it; the timer runs at most once per due point and is dropped once,
/// after its last run.
#[test]
fn loom_cancel_sync_returns_after_the_drop() {
    for periodic in [false, true] {
        model("cancel_sync returns after the drop", move || {
            let runtime = manual();
            let tally = Arc::new(Tally::default());
            let id = add_now(&runtime, periodic, Probe::new(&tally));
            let poller = spawn(&runtime, |runtime| {
                runtime.poll().unwrap();
                advance(TICK);
                runtime.poll().unwrap();
            });
            let resetter = spawn(&runtime, move |runtime| runtime.reset(id, Duration::ZERO));
            let cancelled = runtime.cancel_sync(id);
            assert_eq!(tally.drops.load(SeqCst), 1, "cancel_sync returned first");
            tally.stopped.store(true, SeqCst);
            poller.join().unwrap();
            let _ = resetter.join().unwrap();
            let runs = tally.runs.load(SeqCst);
            if periodic {
                assert_eq!(cancelled, Ok(()), "a periodic timer stops whenever asked");
                assert!(runs <= 2, "{runs} runs in two due points");
            } else {
                assert_eq!(
                    cancelled.is_ok(),
                    runs == 0,
                    "{cancelled:?} after {runs} runs"
                );
                assert!(runs <= 1, "a one-shot ran {runs} times");
            }
            check_ended(&runtime, &[&tally]);
        });
    }
}

/// A one-shot cancelled by one thread while another stops it with `cancel_sync`: whichever
/// takes it out, `cancel_sync` returns after its drop has returned, also when that drop
/// runs on the other thread (which records it as under way in the shard until then).
#[test]
fn loom_cancel_sync_waits_for_the_drop_of_another_cancel() {
    model("cancel_sync waits for another cancel's drop", || {
        let runtime = manual();
        let tally = Arc::new(Tally::default());
        let id = add_now(&runtime, false, Probe::new(&tally));
        let canceller = spawn(&runtime, move |runtime| runtime.cancel(id));
        let stopped = runtime.cancel_sync(id);
        assert_eq!(tally.drops.load(SeqCst), 1, "cancel_sync returned first");
        tally.stopped.store(true, SeqCst);
        let cancelled = canceller.join().unwrap();
        assert!(
            stopped.is_ok() != cancelled.is_ok(),
            "{stopped:?} and {cancelled:?}: one of them takes it out"
        );
        check_ended(&runtime, &[&tally]);
    });
}

/// A group with one pending timer, deleted by one thread while another stops the timer
/// with `cancel_sync`: whichever takes it out, `cancel_sync` returns after its drop has
/// returned (the group's delete records the drop it runs), and the group ends once, after it.
#[test]
fn loom_cancel_sync_waits_for_the_drop_of_a_group_delete() {
    model("cancel_sync waits for a group delete's drop", || {
        let runtime = manual();
        let tally = Arc::new(Tally::default());
        let ends = Arc::new(AtomicUsize::new(0));
        let data = GroupProbe {
            tally: Arc::clone(&tally),
            ends: Arc::clone(&ends),
            timer_drops_at_end: Arc::new(AtomicUsize::new(0)),
        };
        let group = runtime.group_create(Box::new(data)).ok().unwrap();
        let id = accepted(runtime.group_add(group, TICK, Probe::new(&tally)));
        let deleter = spawn(&runtime, move |runtime| runtime.group_delete(group));
        let stopped = runtime.cancel_sync(id);
        assert_eq!(tally.drops.load(SeqCst), 1, "cancel_sync returned first");
        tally.stopped.store(true, SeqCst);
        assert_eq!(deleter.join().unwrap(), Ok(()));
        assert!(
            matches!(stopped, Ok(()) | Err(Error::NotFound)),
            "{stopped:?}"
        );
        assert_eq!(ends.load(SeqCst), 1, "the group did not end exactly once");
        check_ended(&runtime, &[&tally]);
    });
}

/// A periodic timer due now and two threads polling at once: the one due point is handed
/// out once, so the timer runs once, whichever thread runs it.
#[test]
fn loom_two_polls_run_a_due_point_once() {
    model("two polls run a due point once", || {
        let runtime = manual();
        let tally = Arc::new(Tally::default());
        let id = add_now(&runtime, true, Probe::new(&tally));
        let poller = spawn(&runtime, |runtime| runtime.poll().unwrap());
        let ran = runtime.poll().unwrap() + poller.join().unwrap();
        assert_eq!((ran, tally.runs.load(SeqCst)), (1, 1));
        assert_eq!(runtime.cancel(id), Ok(()));
        check_ended(&runtime, &[&tally]);
    });
}

/// A one-shot due now; one thread polls twice (a tick apart) while one caller cancels it
/// and another re-arms it a tick later. Wherever the reset moved it, it runs once or is
/// cancelled: never both, never neither.
#[test]
fn loom_cancel_and_reset_race_a_run() {
    model("cancel and reset race a run", || {
        cancel_and_reset_race_a_run(Duration::ZERO, Probe::new)
    });
}

/// The same with a plain one-shot due in a tick, which the cancel takes without the shard's
/// lock; a cancelled one is dropped once, by the lock's next holder.
#[test]
fn loom_a_cancel_without_the_lock_races_a_run_and_a_reset() {
    model("a cancel without the lock races a run and a reset", || {
        cancel_and_reset_race_a_run(TICK, |tally| Probe::new(tally).trivial())
    });
}

/// A one-shot of `probe` added `delay` ahead: one thread polls when it is due and a tick
/// later, one caller cancels it, another re-arms it a tick later.
fn cancel_and_reset_race_a_run(delay: Duration, probe: impl Fn(&Arc<Tally>) -> Probe) {
    let runtime = manual();
    let tally = Arc::new(Tally::default());
    let id = accepted(runtime.add(delay, probe(&tally)));
    let poller = spawn(&runtime, move |runtime| {
        advance(delay);
        runtime.poll().unwrap();
        advance(TICK);
        runtime.poll().unwrap();
    });
    let canceller = spawn(&runtime, move |runtime| runtime.cancel(id));
    let _ = runtime.reset(id, TICK);
    poller.join().unwrap();
    let cancelled = canceller.join().unwrap().is_ok();
    advance(TICK * 2); // a reset after the last poll
    runtime.poll().unwrap();
    let runs = tally.runs.load(SeqCst);
    assert_eq!(
        runs + usize::from(cancelled),
        1,
        "ran {runs}, cancelled {cancelled}"
    );
    check_ended(&runtime, &[&tally]);
}

/// Two callers cancel one plain pending timer without the lock while a third adds a timer
/// (taking the lock, whose holder removes what was cancelled): exactly one cancel succeeds.
#[test]
fn loom_two_cancels_without_the_lock_one_wins() {
    model("two cancels without the lock, one wins", || {
        let runtime = manual();
        let (tally, other) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
        let id = accepted(runtime.add(TICK, Probe::new(&tally).trivial()));
        let first = spawn(&runtime, move |runtime| runtime.cancel(id));
        let adder = spawn(&runtime, {
            let other = Arc::clone(&other);
            move |runtime| accepted(runtime.add(TICK, Probe::new(&other).trivial()))
        });
        let second = runtime.cancel(id);
        let first = first.join().unwrap();
        let other_id = adder.join().unwrap();
        assert!(
            first.is_ok() != second.is_ok(),
            "cancels {first:?} and {second:?}"
        );
        assert_eq!(first.err().or(second.err()), Some(Error::NotFound));
        runtime.cancel(other_id).unwrap();
        assert_eq!(tally.runs.load(SeqCst) + other.runs.load(SeqCst), 0);
        check_ended(&runtime, &[&tally, &other]);
    });
}

/// A task that lets go of what it holds when a cancel without the shard's lock takes its
/// timer ([`Task::RELEASE_WITHOUT_LOCK`]), as a Python callable held elsewhere too does:
/// that release counts as its drop, and the emptied task drops nothing.
struct Releasing {
    tally: Arc<Tally>,
    holds: AtomicBool,
}

impl Task for Releasing {
    const RELEASE_WITHOUT_LOCK: bool = true;

    fn run(&mut self, _: TimerId) {
        let tally = &self.tally;
        tally.check(self.holds.load(SeqCst), "a run after the release");
        tally.runs.fetch_add(1, SeqCst);
    }

    fn drop_is_trivial(&self) -> bool {
        true
    }

    fn release_shared(&self) {
        self.tally
            .check(self.holds.swap(false, SeqCst), "released twice");
        self.tally.drops.fetch_add(1, SeqCst);
    }
}

impl Drop for Releasing {
    fn drop(&mut self) {
        if self.holds.load(SeqCst) {
            self.tally.drops.fetch_add(1, SeqCst);
        }
    }
}

/// A one-shot due in a tick of a type that releases without the lock: one thread polls
/// when it is due while two others cancel it. Exactly one of the run and the cancels takes
/// it; a cancel that takes it returns after the release; what it held goes exactly once.
#[test]
fn loom_cancels_that_release_without_the_lock_race_a_run() {
    model("cancels that release without the lock race a run", || {
        let runtime = Arc::new(Builder::new().manual(true).build().unwrap());
        let tally = Arc::new(Tally::default());
        let task = Releasing {
            tally: Arc::clone(&tally),
            holds: AtomicBool::new(true),
        };
        let Ok(id) = runtime.add(TICK, task) else {
            panic!("an open runtime takes the timer");
        };
        let poller = thread::spawn({
            let runtime = Arc::clone(&runtime);
            move || {
                advance(TICK);
                runtime.poll().unwrap();
            }
        });
        // A cancel that took the timer returns after the release.
        let cancel = move |runtime: &Runtime<Releasing>, tally: &Tally| {
            let cancelled = runtime.cancel(id).is_ok();
            assert!(
                !cancelled || tally.drops.load(SeqCst) == 1,
                "not released yet"
            );
            cancelled
        };
        let canceller = thread::spawn({
            let (runtime, tally) = (Arc::clone(&runtime), Arc::clone(&tally));
            move || cancel(&runtime, &tally)
        });
        let cancelled = cancel(&runtime, &tally);
        poller.join().unwrap();
        let cancels = usize::from(cancelled) + usize::from(canceller.join().unwrap());
        runtime.poll().unwrap(); // a run the poll above found due but left queued
        let runs = tally.runs.load(SeqCst);
        assert_eq!(runs + cancels, 1, "ran {runs}, cancelled {cancels}");
        let stats = runtime.stats();
        assert!(!tally.broken.load(SeqCst), "a check failed (see above)");
        assert_eq!(tally.drops.load(SeqCst), 1, "not let go of exactly once");
        assert_eq!(stats.pending, 0, "the counters lost a timer: {stats:?}");
    });
}

/// Two one-shots due in the same tick, each of whose drops cancels the other with
/// `cancel_sync`; one worker runs them. The first to run is dropped before the worker
/// takes the next run, so its drop stops the other: exactly one runs, and no thread waits
/// for itself.
#[test]
fn loom_a_drop_stops_the_next_due_timer() {
    model("a drop stops the next due timer", || {
        let runtime = manual_with_workers(1);
        let dropped = Latch::new(2);
        let (first, second) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
        let ids = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
        for (index, tally) in [&first, &second].into_iter().enumerate() {
            let (other, runtime_of_drop) = (Arc::clone(&ids[1 - index]), Arc::clone(&runtime));
            let probe = Probe::new(tally)
                .on_drop(move || {
                    let other = TimerId::from_u64(other.load(SeqCst)).unwrap();
                    let _ = runtime_of_drop.cancel_sync(other);
                })
                .count_drop_on(&dropped);
            ids[index].store(add_now(&runtime, false, probe).as_u64(), SeqCst);
        }
        advance_time(&runtime.inner);
        dropped.wait();
        let runs = first.runs.load(SeqCst) + second.runs.load(SeqCst);
        assert_eq!(runs, 1, "the drop of the first run did not stop the second");
        check_ended(&runtime, &[&first, &second]);
    });
}

/// The tick thread grows the pool as the runtime shuts down: a worker it spawns takes the
/// queued run of a periodic timer. Whatever the order, the shutdown returns only after the
/// timer's drop: a worker that may have taken a run is joined (one adopted after the
/// shutdown took the handles must not be).
#[test]
fn loom_a_worker_spawned_as_the_runtime_shuts_down_is_joined() {
    model(
        "a worker spawned as the runtime shuts down is joined",
        || {
            let config = Builder::new().manual(true).min_workers(1).max_workers(1);
            let runtime = Arc::new(config.build().unwrap());
            let tally = Arc::new(Tally::default());
            add_now(&runtime, true, Probe::new(&tally));
            advance_time(&runtime.inner);
            let spawner = spawn(&runtime, |runtime| {
                for _ in 0..runtime.inner.executor.reserve_initial() {
                    spawn_worker(&runtime.inner);
                }
            });
            let _ = runtime.shutdown();
            assert_eq!(
                tally.drops.load(SeqCst),
                1,
                "the shutdown returned before the drop"
            );
            spawner.join().unwrap();
            check_ended(&runtime, &[&tally]);
        },
    );
}

/// Two idle workers; the model's thread queues one due run at a time (the tick thread's
/// step) and waits for it to run. A queued run always wakes a worker: a wake-up lost
/// between `Executor::push` and `Executor::wait_for_work` leaves every thread waiting.
#[test]
fn loom_a_queued_run_wakes_an_idle_worker() {
    model("a queued run wakes an idle worker", || {
        let runtime = manual_with_workers(2);
        let tallies = [Arc::new(Tally::default()), Arc::new(Tally::default())];
        for tally in &tallies {
            let ran = Latch::new(1);
            let done = Arc::clone(&ran);
            add_now(
                &runtime,
                false,
                Probe::new(tally).on_run(move || done.count_down()),
            );
            advance_time(&runtime.inner);
            ran.wait();
        }
        assert_eq!(runtime.shutdown(), Ok(0));
        check_ended(&runtime, &[&tallies[0], &tallies[1]]);
    });
}

/// The real tick thread (running callbacks itself: no workers) sleeps until a far
/// deadline while two threads add timers due now. Every add earlier than its sleep wakes
/// it, also one racing its scan: both timers run (a lost wake-up leaves it parked).
#[test]
fn loom_an_earlier_add_wakes_the_tick_thread() {
    model("an earlier add wakes the tick thread", || {
        let runtime = Arc::new(Builder::new().max_workers(0).build().unwrap());
        let far = Arc::new(Tally::default());
        accepted(runtime.add(Duration::from_secs(1), Probe::new(&far)));
        let ran = Latch::new(2);
        let early = [Arc::new(Tally::default()), Arc::new(Tally::default())];
        let probes = early.each_ref().map(|tally| {
            let done = Arc::clone(&ran);
            Probe::new(tally).on_run(move || done.count_down())
        });
        let [mine, other] = probes;
        let adder = spawn(&runtime, move |runtime| add_now(runtime, false, other));
        add_now(&runtime, false, mine);
        adder.join().unwrap();
        ran.wait();
        assert_eq!(runtime.shutdown(), Ok(1), "the far timer is discarded");
        check_ended(&runtime, &[&far, &early[0], &early[1]]);
    });
}

/// A threaded runtime (its tick thread, and one worker or none: then callbacks run on the
/// tick thread) with a periodic timer due now is shut down without waiting, from another
/// thread or from the timer's own callback, and a release hook given. The hook runs
/// exactly once, after every run and drop and once no thread of the runtime is left; the
/// timer is dropped once and counted as discarded.
#[test]
fn loom_the_release_hook_runs_once_after_the_last_thread() {
    for (workers, from_callback) in [(0, false), (0, true), (1, false), (1, true)] {
        model(
            "the release hook runs once, after the last thread",
            move || {
                shut_down_without_waiting(workers, from_callback);
            },
        );
    }
}

fn shut_down_without_waiting(workers: usize, from_callback: bool) {
    let runtime = Arc::new(Builder::new().max_workers(workers).build().unwrap());
    let tally = Arc::new(Tally::default());
    let released = Latch::new(1);
    let hooks = Arc::new(AtomicUsize::new(0));
    let release = {
        let (released, hooks, tally) = (released.clone(), hooks.clone(), tally.clone());
        move || {
            hooks.fetch_add(1, SeqCst);
            tally.stopped.store(true, SeqCst);
            released.count_down();
        }
    };
    let probe = Probe::new(&tally);
    if from_callback {
        let runtime_of_run = Arc::clone(&runtime);
        let probe = probe.on_run(move || {
            assert!(runtime_of_run.shutdown_nowait_then(release).is_ok());
        });
        add_now(&runtime, true, probe);
    } else {
        add_now(&runtime, true, probe);
        assert!(runtime.shutdown_nowait_then(release).is_ok());
    }
    released.wait();
    assert_eq!(hooks.load(SeqCst), 1, "the hook ran more than once");
    check_ended(&runtime, &[&tally]);
}

/// A shutdown races an add: the add is refused (its task comes back, not dropped) or the
/// timer is taken and then discarded. Nothing runs, and every task drops once.
#[test]
fn loom_shutdown_races_add() {
    model("shutdown races add", || {
        let runtime = manual();
        let (pending, adding) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
        accepted(runtime.add(TICK, Probe::new(&pending)));
        let closer = spawn(&runtime, |runtime| runtime.shutdown());
        let added = runtime.add(Duration::ZERO, Probe::new(&adding));
        let refused = match added {
            Ok(_) => 0,
            Err(rejected) => {
                assert_eq!(rejected.error, Error::Shutdown);
                assert_eq!(adding.drops.load(SeqCst), 0, "a refused task was dropped");
                1
            }
        };
        let discarded = closer.join().unwrap().unwrap();
        assert_eq!(
            discarded + refused,
            2,
            "discarded {discarded}, refused {refused}"
        );
        assert_eq!(pending.runs.load(SeqCst) + adding.runs.load(SeqCst), 0);
        check_ended(&runtime, &[&pending, &adding]);
    });
}

/// A group's data in these models: records, when the group ends, how many drops its timer's
/// tally had seen, and counts the ends.
struct GroupProbe {
    tally: Arc<Tally>,
    ends: Arc<AtomicUsize>,
    timer_drops_at_end: Arc<AtomicUsize>,
}

impl Drop for GroupProbe {
    fn drop(&mut self) {
        let drops = self.tally.drops.load(SeqCst);
        self.timer_drops_at_end.store(drops, SeqCst);
        self.ends.fetch_add(1, SeqCst);
    }
}

/// A group with one one-shot due now; one thread polls (runs it, drops it, ends it) while
/// the model's thread closes or deletes the group. Whichever comes first, the group ends
/// exactly once, after its timer's drop.
fn group_ends_once_after_its_timer(delete: bool) {
    let runtime = manual();
    let tally = Arc::new(Tally::default());
    let (ends, drops_at_end) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let data = GroupProbe {
        tally: Arc::clone(&tally),
        ends: Arc::clone(&ends),
        timer_drops_at_end: Arc::clone(&drops_at_end),
    };
    let group = runtime.group_create(Box::new(data)).ok().unwrap();
    let added = runtime.group_add(group, Duration::ZERO, Probe::new(&tally));
    assert!(added.is_ok());
    let poller = spawn(&runtime, |runtime| runtime.poll().unwrap());
    let ended = match delete {
        true => runtime.group_delete(group),
        false => runtime.group_close(group),
    };
    assert_eq!(ended, Ok(()));
    let ran = poller.join().unwrap();
    assert!(ran <= 1 && tally.runs.load(SeqCst) == ran);
    assert_eq!(ends.load(SeqCst), 1, "the group did not end exactly once");
    assert_eq!(
        drops_at_end.load(SeqCst),
        1,
        "the group ended before its timer's drop"
    );
    assert_eq!(runtime.group_count(), 0);
    check_ended(&runtime, &[&tally]);
}

#[test]
fn loom_a_group_closed_while_its_timer_runs_ends_once_after_it() {
    model("group closed while its timer runs", || {
        group_ends_once_after_its_timer(false)
    });
}

#[test]
fn loom_a_group_deleted_while_its_timer_runs_ends_once_after_it() {
    model("group deleted while its timer runs", || {
        group_ends_once_after_its_timer(true)
    });
}
