//! Timers that survive a restart: the export of the pending timers (one instant, every
//! timer once, with its task) and the re-creation of a periodic timer in phase (exact, in
//! virtual time).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime};

use timerwheel_core::{
    BoxTask, Error, Export, ExportedTimer, Missed, PeriodMode, Runtime, Task, TimerId, TimerKind,
};

/// 2024-01-01T00:00:00Z.
fn start() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A task that carries the number of its session, and may tell when it runs.
struct Session {
    number: u64,
    on_run: Option<mpsc::Sender<()>>,
    hold: Option<mpsc::Receiver<()>>,
}

impl Session {
    fn new(number: u64) -> Self {
        Session {
            number,
            on_run: None,
            hold: None,
        }
    }
}

impl Task for Session {
    fn run(&mut self, _: TimerId) {
        if let Some(on_run) = &self.on_run {
            let _ = on_run.send(());
        }
        if let Some(hold) = &self.hold {
            let _ = hold.recv();
        }
    }
}

fn virtual_runtime() -> Runtime<Session> {
    Runtime::builder().virtual_clock(start()).build().unwrap()
}

/// Every timer of an export with its session number.
fn export_all(rt: &Runtime<Session>) -> (Export, Vec<(ExportedTimer, u64)>) {
    let mut timers = Vec::new();
    let export = rt
        .export(
            |session| session.number,
            |timer, n| timers.push((*timer, n)),
        )
        .unwrap();
    (export, timers)
}

#[test]
fn an_export_in_virtual_time_gives_the_exact_deadlines_in_order() {
    let rt = virtual_runtime();
    let periodic = |delay, period, mode, n| {
        rt.add_periodic(ms(delay), ms(period), mode, Session::new(n))
            .ok()
            .unwrap()
    };
    let once = rt.add(ms(1500), Session::new(1)).ok().unwrap();
    let rate = periodic(250, 1000, PeriodMode::FixedRate, 2);
    let delay = periodic(700, 300, PeriodMode::FixedDelay, 3);
    let wall_time = start() + ms(10_000);
    let wall = rt.add_at(wall_time, Session::new(4)).ok().unwrap();
    let gone = rt.add(ms(50), Session::new(5)).ok().unwrap();
    rt.cancel(gone).unwrap();
    // 250 ms: the fixed-rate timer ran once, next at 1250; 700: the fixed-delay one ran,
    // next at 1000.
    assert_eq!(rt.advance(ms(900)).unwrap(), 2);
    let (export, timers) = export_all(&rt);
    let at = ms(900);
    assert_eq!(
        export,
        Export {
            at_monotonic: at,
            at: start() + at,
            timers: 4,
            running: 0
        }
    );
    let expected = [
        (
            delay,
            1000,
            3,
            TimerKind::Periodic {
                period: ms(300),
                mode: PeriodMode::FixedDelay,
            },
        ),
        (
            rate,
            1250,
            2,
            TimerKind::Periodic {
                period: ms(1000),
                mode: PeriodMode::FixedRate,
            },
        ),
        (once, 1500, 1, TimerKind::OneShot),
        (wall, 10_000, 4, TimerKind::WallClock { when: wall_time }),
    ];
    let expected: Vec<_> = expected
        .into_iter()
        .map(|(id, due, number, kind)| {
            let timer = ExportedTimer {
                id,
                due_monotonic: ms(due),
                due: start() + ms(due),
                kind,
            };
            (timer, number)
        })
        .collect();
    assert_eq!(timers, expected);
}

#[test]
fn a_periodic_timer_whose_callback_runs_is_left_out_and_counted() {
    let rt = Runtime::builder()
        .min_workers(1)
        .build::<Session>()
        .unwrap();
    let (started, on_started) = mpsc::channel();
    let (release, hold) = mpsc::channel();
    let busy = Session {
        number: 1,
        on_run: Some(started),
        hold: Some(hold),
    };
    let mode = PeriodMode::FixedRate;
    let busy = rt.add_periodic(ms(1), ms(10), mode, busy).ok().unwrap();
    let idle = rt
        .add(Duration::from_secs(3600), Session::new(2))
        .ok()
        .unwrap();
    on_started
        .recv_timeout(Duration::from_secs(30))
        .expect("the periodic callback started");
    let (export, timers) = export_all(&rt);
    assert_eq!((export.timers, export.running), (1, 1));
    assert_eq!(timers[0].0.id, idle);
    release.send(()).unwrap();
    rt.cancel_sync(busy).unwrap();
}

/// What one adding thread did, each step stamped by a shared sequence counter.
#[derive(Default)]
struct Ops {
    /// The id, and the stamps taken before its add began and after it returned.
    added: Vec<(TimerId, u64, u64)>,
    /// The id, and the stamps taken before its cancel began and after it returned.
    cancelled: Vec<(TimerId, u64, u64)>,
    /// The number each id's task carries.
    numbers: HashMap<TimerId, u64>,
}

/// Adds far timers and cancels every third one, until `rounds` adds were made.
fn churn(rt: &Runtime<Session>, seq: &AtomicU64, thread: u64, rounds: u64) -> Ops {
    let mut ops = Ops::default();
    for n in 0..rounds {
        let number = thread << 32 | n;
        let before = seq.fetch_add(1, SeqCst);
        let id = rt
            .add(Duration::from_secs(3600 + n), Session::new(number))
            .ok()
            .unwrap();
        ops.added.push((id, before, seq.fetch_add(1, SeqCst)));
        ops.numbers.insert(id, number);
        if n % 3 == 2 {
            let (victim, _, _) = ops.added[ops.added.len() - 2];
            let before = seq.fetch_add(1, SeqCst);
            rt.cancel(victim).unwrap();
            ops.cancelled
                .push((victim, before, seq.fetch_add(1, SeqCst)));
        }
    }
    ops
}

#[test]
fn an_export_under_concurrent_adds_and_cancels_holds_every_timer_once() {
    let rt = Arc::new(Runtime::builder().build::<Session>().unwrap());
    let seq = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..3)
        .map(|thread| {
            let (rt, seq) = (Arc::clone(&rt), Arc::clone(&seq));
            thread::spawn(move || churn(&rt, &seq, thread, 20_000))
        })
        .collect();
    let mut exports = Vec::new();
    for _ in 0..20 {
        thread::sleep(ms(5));
        let began = seq.fetch_add(1, SeqCst);
        let (_, timers) = export_all(&rt);
        let ended = seq.fetch_add(1, SeqCst);
        exports.push((began, ended, timers));
    }
    let ops: Vec<Ops> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(exports.iter().any(|(_, _, timers)| timers.len() > 100));
    for (began, ended, timers) in exports {
        check_export(began, ended, &timers, &ops);
    }
}

/// An export taken between the stamps `began` and `ended` holds each timer once, with its
/// own task; every timer added before it began and not cancelled before it ended; none
/// cancelled before it began, and none added after it ended.
fn check_export(began: u64, ended: u64, timers: &[(ExportedTimer, u64)], ops: &[Ops]) {
    let mut seen = HashSet::new();
    for (timer, number) in timers {
        assert!(seen.insert(timer.id), "{:?} exported twice", timer.id);
        let owner = ops.iter().find_map(|o| o.numbers.get(&timer.id));
        assert_eq!(owner, Some(number), "{:?} with another's task", timer.id);
    }
    for thread in ops {
        let cancel_of = |id| thread.cancelled.iter().find(|c| c.0 == id);
        for &(id, add_began, added) in &thread.added {
            let cancel = cancel_of(id);
            if added < began && cancel.is_none_or(|&(_, before, _)| before > ended) {
                assert!(
                    seen.contains(&id),
                    "{id:?}: pending throughout, not exported"
                );
            }
            if add_began > ended || cancel.is_some_and(|&(_, _, after)| after < began) {
                assert!(!seen.contains(&id), "{id:?}: not pending then, exported");
            }
        }
    }
}

/// A runtime on a virtual clock at [`start`] plus `ms`, and a log of when its timers ran
/// (milliseconds since [`start`]).
fn logged_runtime(at_ms: u64) -> (Arc<Runtime>, Arc<Mutex<Vec<u64>>>) {
    let rt = Runtime::builder()
        .virtual_clock(start() + ms(at_ms))
        .build()
        .unwrap();
    (Arc::new(rt), Arc::default())
}

fn logger(rt: &Arc<Runtime>, log: &Arc<Mutex<Vec<u64>>>) -> BoxTask {
    let (rt, log) = (Arc::downgrade(rt), Arc::clone(log));
    Box::new(move |_| {
        let now = rt.upgrade().unwrap().now().duration_since(start()).unwrap();
        log.lock().unwrap().push(now.as_millis() as u64);
    })
}

/// The times a fixed-rate timer every second, anchored at `start() + first_ms` (which may
/// lie before the clock's start) and added at `start()`, runs in its first 3 s.
fn runs_anchored_at(first_ms: i64, missed: Missed) -> Vec<u64> {
    let (rt, log) = logged_runtime(0);
    let offset = ms(first_ms.unsigned_abs());
    let first = match first_ms < 0 {
        true => start() - offset,
        false => start() + offset,
    };
    let mode = PeriodMode::FixedRate;
    let task = logger(&rt, &log);
    rt.add_periodic_at(first, ms(1000), mode, missed, task)
        .ok()
        .unwrap();
    rt.advance(ms(3000)).unwrap();
    let runs = log.lock().unwrap().clone();
    runs
}

#[test]
fn missed_points_run_once_now_then_the_schedule_goes_on_in_phase() {
    // Points at -2.5 s, -1.5 s, -0.5 s (missed), then 0.5 s, 1.5 s, ...
    assert_eq!(
        runs_anchored_at(-2500, Missed::RunOnce),
        [0, 500, 1500, 2500]
    );
}

#[test]
fn missed_points_are_skipped_to_the_next_one() {
    assert_eq!(runs_anchored_at(-2500, Missed::Skip), [500, 1500, 2500]);
}

#[test]
fn a_start_ahead_or_a_point_due_now_runs_on_its_schedule_under_either_policy() {
    for missed in [Missed::RunOnce, Missed::Skip] {
        assert_eq!(runs_anchored_at(700, missed), [700, 1700, 2700]);
        assert_eq!(runs_anchored_at(-2000, missed), [0, 1000, 2000, 3000]);
    }
}

#[test]
fn a_reset_before_the_catch_up_run_moves_the_whole_schedule() {
    let (rt, log) = logged_runtime(0);
    let first = start() - ms(2500);
    let (mode, missed) = (PeriodMode::FixedRate, Missed::RunOnce);
    let id = rt
        .add_periodic_at(first, ms(1000), mode, missed, logger(&rt, &log))
        .ok()
        .unwrap();
    rt.reset(id, ms(300)).unwrap();
    rt.advance(ms(3000)).unwrap();
    assert_eq!(*log.lock().unwrap(), [300, 1300, 2300]);
}

#[test]
fn a_timer_exported_and_re_created_after_a_restart_stays_in_phase() {
    // Before: every second from 0.25 s; exported at 1.9 s, next point 2.25 s.
    let (before, _) = logged_runtime(0);
    let noop: BoxTask = Box::new(|_| {});
    let mode = PeriodMode::FixedRate;
    before
        .add_periodic(ms(250), ms(1000), mode, noop)
        .ok()
        .unwrap();
    before.advance(ms(1900)).unwrap();
    let mut saved = Vec::new();
    before
        .export(|_| (), |timer, ()| saved.push(*timer))
        .unwrap();
    drop(before);
    // Down until 5 s: the points at 2.25, 3.25 and 4.25 s were missed.
    let (after, log) = logged_runtime(5000);
    for timer in saved {
        let TimerKind::Periodic { period, mode } = timer.kind else {
            panic!("{timer:?} was periodic")
        };
        let task = logger(&after, &log);
        after
            .add_periodic_at(timer.due, period, mode, Missed::RunOnce, task)
            .ok()
            .unwrap();
    }
    after.advance(ms(2000)).unwrap();
    assert_eq!(*log.lock().unwrap(), [5000, 5250, 6250]);
}

/// Adds `count` far timers from a thread of its own.
fn add_far_from_a_new_thread(rt: &Arc<Runtime<Session>>, count: u64) -> Vec<TimerId> {
    let rt = Arc::clone(rt);
    thread::spawn(move || {
        let far = |n| Duration::from_secs(3600 + n);
        let add = |n| rt.add(far(n), Session::new(n)).ok().unwrap();
        (0..count).map(add).collect()
    })
    .join()
    .unwrap()
}

#[test]
fn an_export_is_one_instant_across_shards() {
    // One thread's timers (ys, in its shard) are cancelled one by one by another thread,
    // which adds a timer (xs[i], in its own shard, most often another) after each cancel of
    // ys[i]. An export of one instant that holds xs[i] cannot hold ys[i]; one that walked
    // the shards one after the other could, when it passed the ys' shard before the cancel
    // and the xs' after the add.
    const COUNT: u64 = 50_000;
    let rt = Arc::new(Runtime::builder().build::<Session>().unwrap());
    let ys = Arc::new(add_far_from_a_new_thread(&rt, COUNT));
    // Every 5,000 cancels the canceller asks for an export and goes on cancelling while it
    // is taken (once the one before is done): ten exports among the cancels, however fast
    // either side runs, and no pile of exports on a slow machine.
    let (requested, exported) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let canceller = {
        let (rt, ys) = (Arc::clone(&rt), Arc::clone(&ys));
        let (requested, exported) = (Arc::clone(&requested), Arc::clone(&exported));
        thread::spawn(move || {
            let mut xs = Vec::new();
            for (i, &y) in ys.iter().enumerate() {
                if i % 5000 == 0 {
                    while exported.load(SeqCst) < requested.load(SeqCst) {
                        thread::yield_now();
                    }
                    requested.fetch_add(1, SeqCst);
                }
                rt.cancel(y).unwrap();
                let x = rt.add(Duration::from_secs(7200), Session::new(0));
                xs.push(x.ok().unwrap());
            }
            xs
        })
    };
    let mut exports = Vec::new();
    while !canceller.is_finished() {
        if exported.load(SeqCst) == requested.load(SeqCst) {
            thread::yield_now();
            continue;
        }
        let mut ids = HashSet::new();
        rt.export(
            |_| (),
            |timer, ()| {
                ids.insert(timer.id);
            },
        )
        .unwrap();
        exports.push(ids);
        exported.fetch_add(1, SeqCst);
    }
    let xs = canceller.join().unwrap();
    assert!(exports.len() >= 9, "the exports fell among the cancels");
    for ids in &exports {
        for (x, y) in xs.iter().zip(ys.iter()) {
            assert!(
                !(ids.contains(x) && ids.contains(y)),
                "{y:?} exported with {x:?}, added after it was cancelled"
            );
        }
    }
}

/// Sets its flag when dropped: a task's data, freed by its drop.
struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A timer an hour away whose task counts its drop in `dropped`.
fn flagged(rt: &Runtime, dropped: &Arc<AtomicUsize>) -> TimerId {
    let flag = DropFlag(Arc::clone(dropped));
    let timer = rt
        .after(ms(3_600_000), move |_| {
            let _ = &flag;
        })
        .unwrap();
    timer.id()
}

/// Runs its closure when dropped.
struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// A timer an hour away whose task runs `f` when dropped.
fn dropping(rt: &Runtime, f: impl FnOnce() + Send + 'static) -> TimerId {
    let on_drop = OnDrop(Some(Box::new(f)));
    let timer = rt.after(ms(3_600_000), move |_| {
        let _ = &on_drop;
    });
    timer.unwrap().id()
}

/// A drop an export deferred runs on the exporting thread once the export's function has
/// returned, for its own timer: `cancel_sync` of that timer from it is `Busy`, and
/// `cancel_sync` of another timer returns only after that timer's drop, whether the timer
/// was pending or its drop was deferred too (listed after this one).
#[test]
fn a_drop_an_export_deferred_waits_for_other_drops_and_is_busy_for_its_own() {
    let rt = Arc::new(Runtime::builder().build().unwrap());
    let (b_dropped, c_dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let b = flagged(&rt, &b_dropped);
    let c = flagged(&rt, &c_dropped);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let a_id = Arc::new(std::sync::OnceLock::new());
    let a = dropping(&rt, {
        let (rt, seen, a_id) = (Arc::downgrade(&rt), Arc::clone(&seen), Arc::clone(&a_id));
        let (b_dropped, c_dropped) = (Arc::clone(&b_dropped), Arc::clone(&c_dropped));
        move || {
            let rt = rt.upgrade().unwrap();
            let own = rt.cancel_sync(*a_id.get().unwrap());
            let pending = (rt.cancel_sync(b), b_dropped.load(SeqCst));
            let deferred = (rt.cancel_sync(c), c_dropped.load(SeqCst));
            seen.lock().unwrap().push((own, pending, deferred));
        }
    });
    a_id.set(a).unwrap();
    let mut first = true;
    rt.export(
        |_| (),
        |_, ()| {
            if std::mem::take(&mut first) {
                let rt = Arc::clone(&rt);
                let cancels = thread::spawn(move || (rt.cancel(a), rt.cancel(c)));
                assert_eq!(cancels.join().unwrap(), (Ok(()), Ok(())));
            }
        },
    )
    .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(
        *seen,
        [(Err(Error::Busy), (Ok(()), 1), (Err(Error::NotFound), 1))]
    );
}

#[test]
fn calls_back_from_an_export_are_busy_and_change_nothing() {
    let rt = Runtime::builder().manual(true).build().unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    let ids: Vec<_> = (0..3).map(|_| flagged(&rt, &dropped)).collect();
    let before = rt.stats();
    // From `copy` (under the locks) and from `visit`, what changes the runtime or waits
    // is refused; from `visit`, reads work.
    let refused = || {
        let noop: BoxTask = Box::new(|_| {});
        assert_eq!(
            rt.add(ms(1), noop).err().map(|r| r.error),
            Some(Error::Busy)
        );
        assert_eq!(rt.cancel(ids[0]), Err(Error::Busy));
        assert_eq!(rt.cancel_sync(ids[1]), Err(Error::Busy));
        assert_eq!(rt.reset(ids[2], ms(1)), Err(Error::Busy));
        assert_eq!(rt.poll(), Err(Error::Busy));
        assert_eq!(rt.export(|_| (), |_, ()| {}).err(), Some(Error::Busy));
        assert_eq!(rt.shutdown(), Err(Error::Busy));
        assert_eq!(rt.shutdown_nowait(), Err(Error::Busy));
    };
    let (mut copies, mut visits) = (0, 0);
    let export = rt
        .export(
            |_| {
                refused();
                copies += 1;
            },
            |_, ()| {
                refused();
                assert_eq!(rt.stats().pending, 3, "reads work");
                assert!(rt.is_pending(ids[0]));
                visits += 1;
            },
        )
        .unwrap();
    assert_eq!(copies, 3);
    assert_eq!((export.timers, visits), (3, 3));
    assert_eq!(rt.stats(), before, "nothing changed");
    assert!(ids.iter().all(|&id| rt.is_pending(id)));
    assert_eq!(dropped.load(SeqCst), 0);
    assert_eq!(
        rt.add(ms(1), Box::new(|_| {}))
            .map(|_| ())
            .err()
            .map(|r| r.error),
        None
    );
}

#[test]
fn an_export_blocks_no_cancel_and_defers_the_drops_until_its_function_returned() {
    let rt = Arc::new(Runtime::builder().build().unwrap());
    let dropped = Arc::new(AtomicUsize::new(0));
    let ids: Vec<_> = (0..2).map(|_| flagged(&rt, &dropped)).collect();
    let (cancelled_tx, cancelled) = mpsc::channel();
    let mut canceller = None;
    let mut first = true;
    rt.export(
        |_| (),
        |_, ()| {
            if !std::mem::take(&mut first) {
                return;
            }
            // Another thread cancels both timers while the export's function runs: the
            // cancels return at once, and neither task is dropped while it runs.
            let (rt, ids, tx) = (Arc::clone(&rt), ids.clone(), cancelled_tx.clone());
            let sync_dropped = Arc::clone(&dropped);
            canceller = Some(thread::spawn(move || {
                rt.cancel(ids[0]).unwrap();
                tx.send(()).unwrap();
                rt.cancel_sync(ids[1]).unwrap();
                sync_dropped.load(SeqCst) // after cancel_sync: its drop has run
            }));
            cancelled
                .recv_timeout(Duration::from_secs(30))
                .expect("a cancel waited for the export's function");
            thread::sleep(ms(50));
            assert_eq!(dropped.load(SeqCst), 0, "a task dropped under an export");
        },
    )
    .unwrap();
    assert_eq!(
        dropped.load(SeqCst),
        2,
        "the deferred drops ran before export returned"
    );
    assert_eq!(canceller.unwrap().join().unwrap(), 2);
}
