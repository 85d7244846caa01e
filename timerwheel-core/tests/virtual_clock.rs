//! The virtual clock: time moves only by `advance` / `advance_to_next`, which run what falls
//! due on the calling thread. Every check here is exact: nothing depends on the machine's
//! speed.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use timerwheel_core::{BoxTask, Error, PeriodMode, Runtime, TimerId};

const MINUTE: Duration = Duration::from_secs(60);
const DAY: Duration = Duration::from_secs(86_400);

/// 2024-01-01T00:00:00Z.
fn start() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_704_067_200)
}

fn virtual_runtime() -> Arc<Runtime> {
    Arc::new(Runtime::builder().virtual_clock(start()).build().unwrap())
}

/// Virtual time since the start.
fn since_start(rt: &Runtime) -> Duration {
    rt.now().duration_since(start()).unwrap()
}

/// A shared log of what ran, with the virtual time it ran at.
type Log = Arc<Mutex<Vec<(String, Duration)>>>;

fn logger(rt: &Arc<Runtime>, log: &Log, name: impl Into<String>) -> BoxTask {
    let (rt, log, name) = (Arc::downgrade(rt), Arc::clone(log), name.into());
    Box::new(move |_| {
        let now = since_start(&rt.upgrade().unwrap());
        log.lock().unwrap().push((name.clone(), now));
    })
}

fn times(log: &Log) -> Vec<Duration> {
    log.lock().unwrap().iter().map(|(_, t)| *t).collect()
}

#[test]
fn a_fixed_rate_schedule_over_a_year_runs_at_its_exact_points() {
    let rt = virtual_runtime();
    let log = Log::default();
    // Not a multiple of the 1 ms tick: each point rounds up on its own, none drifts.
    let period = Duration::from_secs(5400) + Duration::from_micros(250);
    let mode = PeriodMode::FixedRate;
    let task = logger(&rt, &log, "charge");
    rt.add_periodic(period, period, mode, task).unwrap();
    let year = 365 * DAY;
    let ran = rt.advance(year).unwrap();
    let runs = times(&log);
    let points = (year.as_nanos() / period.as_nanos()) as u32;
    assert_eq!((ran, runs.len()), (points as usize, points as usize));
    for (n, &ran_at) in (1..=points).zip(&runs) {
        let point = period * n;
        let on_tick = Duration::from_millis(point.as_nanos().div_ceil(1_000_000) as u64);
        assert_eq!(ran_at, on_tick, "run {n} of the point at {point:?}");
    }
    assert_eq!(since_start(&rt), year);
}

#[test]
fn advance_runs_in_deadline_order_and_stops_at_the_target() {
    let rt = virtual_runtime();
    let log = Log::default();
    for (name, secs) in [("c", 30), ("a", 10), ("late", 61), ("b", 20)] {
        let task = logger(&rt, &log, name);
        rt.add(Duration::from_secs(secs), task).unwrap();
    }
    assert_eq!(rt.advance(MINUTE), Ok(3));
    let names: Vec<_> = log.lock().unwrap().iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(times(&log), [10, 20, 30].map(Duration::from_secs));
    assert_eq!(since_start(&rt), MINUTE, "the clock stops at the target");
    assert_eq!(rt.advance_to_next(), Ok(1));
    assert_eq!(since_start(&rt), Duration::from_secs(61));
    assert_eq!(rt.advance_to_next(), Ok(0), "nothing pending");
    assert_eq!(
        since_start(&rt),
        Duration::from_secs(61),
        "and the clock stays"
    );
}

/// A billing-like program with a seeded choice of delays: sessions charge every minute,
/// each charge may add a follow-up timer or push its session's idle timeout back.
fn simulate(seed: u64) -> Vec<(String, Duration)> {
    let rt = virtual_runtime();
    let log = Log::default();
    let mut state = seed;
    let mut next = move |bound: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % bound
    };
    for session in 0..20 {
        let delay = Duration::from_millis(next(60_000));
        let idle = Duration::from_millis(next(600_000));
        let (weak, log2) = (Arc::downgrade(&rt), Arc::clone(&log));
        let mut record = logger(&rt, &log, format!("charge {session}"));
        let follow_up = Duration::from_millis(next(5_000));
        let charge = move |id| {
            record(id);
            let rt = weak.upgrade().unwrap();
            let task = logger(&rt, &log2, format!("follow-up {session}"));
            rt.add(follow_up, task).unwrap();
        };
        let mode = PeriodMode::FixedRate;
        rt.add_periodic(delay, MINUTE, mode, Box::new(charge))
            .unwrap();
        let task = logger(&rt, &log, format!("idle {session}"));
        rt.add(idle, task).unwrap();
    }
    rt.advance(30 * MINUTE).unwrap();
    rt.shutdown().unwrap();
    let log = log.lock().unwrap();
    log.clone()
}

#[test]
fn the_same_program_runs_its_callbacks_in_the_same_order() {
    let first = simulate(7);
    assert!(first.len() > 600, "{} runs", first.len());
    assert!(first.windows(2).all(|w| w[0].1 <= w[1].1), "out of order");
    assert_eq!(first, simulate(7));
    assert_ne!(first, simulate(8), "the seed matters");
}

#[test]
fn timers_added_by_callbacks_run_in_the_same_advance_when_due() {
    let rt = virtual_runtime();
    let log = Log::default();
    let (weak, log2) = (Arc::downgrade(&rt), Arc::clone(&log));
    let mut record = logger(&rt, &log, "first");
    rt.add(
        Duration::from_secs(10),
        Box::new(move |id| {
            record(id);
            let rt = weak.upgrade().unwrap();
            for (name, secs) in [("now", 0), ("soon", 5), ("beyond", 15)] {
                let task = logger(&rt, &log2, name);
                rt.add(Duration::from_secs(secs), task).unwrap();
            }
        }),
    )
    .unwrap();
    assert_eq!(rt.advance(Duration::from_secs(20)), Ok(3));
    let expected = [("first", 10), ("now", 10), ("soon", 15)]
        .map(|(name, secs)| (name.to_string(), Duration::from_secs(secs)));
    assert_eq!(*log.lock().unwrap(), expected);
    assert_eq!(rt.advance(Duration::from_secs(5)), Ok(1), "beyond: at 25 s");
}

/// Counts the drops of a task.
struct Drops(Arc<AtomicUsize>);

impl Drop for Drops {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A callback that counts its runs and its drops.
fn counted(runs: &Arc<AtomicUsize>, drops: &Arc<AtomicUsize>) -> impl FnMut(TimerId) {
    let (runs, guard) = (Arc::clone(runs), Drops(Arc::clone(drops)));
    move |_| {
        let _ = &guard;
        runs.fetch_add(1, SeqCst);
    }
}

#[test]
fn delete_and_drop_hold_in_virtual_time() {
    let rt = virtual_runtime();
    let [runs, drops] = [(); 2].map(|_| Arc::new(AtomicUsize::new(0)));
    let fired = rt.add(MINUTE, Box::new(counted(&runs, &drops))).unwrap();
    let deleted = rt.add(MINUTE, Box::new(counted(&runs, &drops))).unwrap();
    let mode = PeriodMode::FixedDelay;
    let task = Box::new(counted(&runs, &drops));
    let periodic = rt.add_periodic(MINUTE, MINUTE, mode, task).unwrap();
    let _pending = rt.add(DAY, Box::new(counted(&runs, &drops))).unwrap();
    assert_eq!(rt.cancel(deleted), Ok(()));
    assert_eq!(drops.load(SeqCst), 1, "a deleted timer is dropped at once");
    assert_eq!(
        rt.advance(MINUTE * 3),
        Ok(4),
        "the one-shot and three periodic runs"
    );
    assert_eq!(drops.load(SeqCst), 2, "the fired one-shot, once");
    assert_eq!(rt.cancel(fired), Err(Error::NotFound));
    assert_eq!(rt.cancel(periodic), Ok(()));
    assert_eq!(rt.cancel(periodic), Err(Error::NotFound));
    assert_eq!(rt.advance(MINUTE * 3), Ok(0), "nothing runs after a delete");
    assert_eq!(drops.load(SeqCst), 3);
    assert_eq!(rt.shutdown(), Ok(1), "the day-long timer is discarded");
    assert_eq!((runs.load(SeqCst), drops.load(SeqCst)), (4, 4));
}

#[test]
fn a_fixed_delay_schedule_counts_from_the_instant_its_run_returned() {
    let rt = virtual_runtime();
    let log = Log::default();
    let (weak, mut record) = (Arc::downgrade(&rt), logger(&rt, &log, "run"));
    let task = move |id| {
        record(id);
        // Pushed back from inside its run: the next run counts from this instant.
        if weak.upgrade().unwrap().now() == start() + 2 * MINUTE {
            weak.upgrade()
                .unwrap()
                .reset(id, Duration::from_secs(90))
                .unwrap();
        }
    };
    let mode = PeriodMode::FixedDelay;
    rt.add_periodic(MINUTE, MINUTE, mode, Box::new(task))
        .unwrap();
    rt.advance(5 * MINUTE).unwrap();
    let expected = [60, 120, 210, 270].map(Duration::from_secs);
    assert_eq!(times(&log), expected);
}

#[test]
fn wall_clock_timers_follow_the_virtual_wall_clock() {
    let rt = virtual_runtime();
    let runs = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(0));
    rt.at(start() + DAY, counted(&runs, &drops)).unwrap();
    rt.at(start() - DAY, counted(&runs, &drops)).unwrap();
    assert_eq!(
        rt.advance(Duration::ZERO),
        Ok(1),
        "a time in the past runs at once"
    );
    assert_eq!(
        rt.advance(DAY - Duration::from_millis(1)),
        Ok(0),
        "never early"
    );
    assert_eq!(rt.advance_to_next(), Ok(1));
    assert_eq!(rt.now(), start() + DAY);
}

#[test]
fn only_a_virtual_clock_advances_and_not_from_its_own_callbacks() {
    let real: Runtime = Runtime::builder().manual(true).build().unwrap();
    assert_eq!(real.advance(MINUTE), Err(Error::Invalid));
    assert_eq!(real.advance_to_next(), Err(Error::Invalid));
    let rt = virtual_runtime();
    assert!(rt.config().manual, "no threads");
    let (weak, inside) = (Arc::downgrade(&rt), Arc::new(Mutex::new(None)));
    let seen = Arc::clone(&inside);
    rt.after(MINUTE, move |_| {
        *seen.lock().unwrap() = Some(weak.upgrade().unwrap().advance(MINUTE));
    })
    .unwrap();
    assert_eq!(rt.advance_to_next(), Ok(1));
    assert_eq!(*inside.lock().unwrap(), Some(Err(Error::Busy)));
    assert_eq!(rt.now(), start() + MINUTE, "nothing moved the clock");
}

#[test]
fn deadline_is_the_next_run_on_the_runtime_clock_and_none_once_it_is_not_waiting() {
    let rt = virtual_runtime();
    let once = rt
        .add(Duration::from_millis(2500), Box::new(|_| {}))
        .unwrap();
    let every = rt
        .add_periodic(
            Duration::from_secs(1),
            Duration::from_secs(10),
            PeriodMode::FixedRate,
            Box::new(|_| {}),
        )
        .unwrap();
    assert_eq!(
        rt.deadline(once),
        Some(start() + Duration::from_millis(2500))
    );
    assert_eq!(rt.deadline(every), Some(start() + Duration::from_secs(1)));
    rt.advance(Duration::from_secs(1)).unwrap();
    assert_eq!(rt.deadline(every), Some(start() + Duration::from_secs(11)));
    rt.reset(once, Duration::from_secs(4)).unwrap();
    assert_eq!(rt.deadline(once), Some(start() + Duration::from_secs(5)));
    rt.advance(Duration::from_secs(4)).unwrap();
    assert_eq!(rt.deadline(once), None, "fired");
    rt.cancel(every).unwrap();
    assert_eq!(rt.deadline(every), None, "cancelled");
    assert_eq!(
        rt.deadline(TimerId::from_u64(u64::MAX).unwrap()),
        None,
        "unknown"
    );
}
/// A callback that counts its runs.
fn count(runs: &Arc<AtomicUsize>) -> impl FnMut(TimerId) + Send + 'static {
    let runs = Arc::clone(runs);
    move |_| {
        runs.fetch_add(1, SeqCst);
    }
}

/// The largest delay a tokio sleep takes (six levels of 64 slots of 1 ms), ported onto
/// this API as tokio's `exactly_max` and `no_out_of_bounds_close_to_max` test it, and the
/// largest delays this API takes: each timer runs when the clock is advanced to it.
#[test]
fn a_timer_of_the_largest_delay_runs_when_the_clock_gets_there() {
    const TOKIO_MAX_MS: u64 = (1 << (6 * 6)) - 1;
    let delays = [
        Duration::from_millis(TOKIO_MAX_MS),
        Duration::from_millis(TOKIO_MAX_MS - 1),
        Duration::from_millis(u64::MAX),
        Duration::from_millis(u64::MAX - 1),
        Duration::MAX,
    ];
    for delay in delays {
        let rt = virtual_runtime();
        let runs = Arc::new(AtomicUsize::new(0));
        rt.after(delay, count(&runs)).unwrap();
        assert_eq!(rt.advance_to_next(), Ok(1), "{delay:?}");
        assert_eq!(runs.load(SeqCst), 1);
        assert!(since_start(&rt) <= delay, "{delay:?}");
        assert_eq!(rt.advance_to_next(), Ok(0), "nothing left, and no spin");
    }
}

#[test]
fn the_clock_reaches_its_end_and_refuses_to_go_past_it() {
    let rt = virtual_runtime();
    let runs = Arc::new(AtomicUsize::new(0));
    rt.after(Duration::from_millis(u64::MAX), count(&runs))
        .unwrap();
    rt.add_periodic(
        Duration::from_millis(u64::MAX),
        Duration::from_millis(1),
        PeriodMode::FixedRate,
        Box::new(count(&runs)),
    )
    .unwrap();
    assert_eq!(rt.advance(DAY), Ok(0));
    // An advance past 2^64 ns from the start is refused and changes nothing.
    assert_eq!(rt.advance(Duration::MAX), Err(Error::Invalid));
    assert_eq!(
        rt.advance(Duration::from_nanos(u64::MAX)),
        Err(Error::Invalid)
    );
    assert_eq!(since_start(&rt), DAY, "the clock did not move");
    assert_eq!(runs.load(SeqCst), 0, "nothing ran");
    // Up to the end it goes, in one call, and runs both there; the periodic timer's next
    // point lies past the range: it waits, and nothing spins.
    let rest = Duration::from_nanos(u64::MAX) - DAY;
    assert_eq!(rt.advance(rest), Ok(2));
    assert_eq!(since_start(&rt), Duration::from_nanos(u64::MAX));
    assert_eq!(rt.advance_to_next(), Ok(0));
    assert_eq!(rt.next_timeout(), None);
    assert_eq!(rt.advance(Duration::from_nanos(1)), Err(Error::Invalid));
    assert_eq!(rt.stats().pending, 1, "the periodic timer is still there");
    assert_eq!(rt.shutdown(), Ok(1));
}

#[test]
fn a_far_wall_clock_timer_waits_at_the_end_and_next_timeout_says_how_far() {
    let rt = virtual_runtime();
    let runs = Arc::new(AtomicUsize::new(0));
    let far = SystemTime::UNIX_EPOCH + Duration::from_millis(i64::MAX as u64);
    rt.at(far, count(&runs)).unwrap();
    rt.advance(365 * DAY).unwrap();
    let to_end = Duration::from_nanos(u64::MAX - 1_000_000) - 365 * DAY;
    // Advancing by what it says reaches the timer (in a few steps: the wheel may first
    // move it closer), never past the end of the clock's range.
    let mut steps = 0;
    while runs.load(SeqCst) == 0 {
        let wait = rt.next_timeout().unwrap();
        assert!(wait <= to_end, "{wait:?}");
        rt.advance(wait).unwrap();
        steps += 1;
        assert!(steps < 20, "{steps} steps");
    }
    assert!(
        since_start(&rt) >= to_end,
        "held at the end: never early within the range"
    );
    assert_eq!(rt.next_timeout(), None);
}

#[test]
fn a_fixed_rate_period_below_the_tick_runs_once_per_clock_reading() {
    let rt = virtual_runtime();
    let log = Log::default();
    let period = Duration::from_micros(250);
    let task = logger(&rt, &log, "fast");
    rt.add_periodic(period, period, PeriodMode::FixedRate, task)
        .unwrap();
    assert_eq!(rt.advance(Duration::from_millis(10)), Ok(10));
    let runs = times(&log);
    let ticks: Vec<_> = (1..=10).map(Duration::from_millis).collect();
    assert_eq!(
        runs, ticks,
        "one run per reading: the points at it are coalesced"
    );
}

/// Two to eight threads advance one virtual wheel at once: each advance waits for the one
/// under way, so the clock ends at the sum, every timer in the span runs, once, and no two
/// callbacks overlap.
#[test]
fn concurrent_advances_take_turns() {
    for threads in 2..=8u32 {
        let rt = virtual_runtime();
        let (runs, inside) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let overlaps = Arc::new(AtomicUsize::new(0));
        const STEPS: u32 = 200;
        let span = threads * STEPS;
        for ms in 1..=u64::from(span) {
            let (runs, inside, overlaps) = (
                Arc::clone(&runs),
                Arc::clone(&inside),
                Arc::clone(&overlaps),
            );
            rt.after(Duration::from_millis(ms), move |_| {
                if inside.fetch_add(1, SeqCst) != 0 {
                    overlaps.fetch_add(1, SeqCst);
                }
                std::thread::sleep(Duration::from_micros(20)); // another advance may start
                runs.fetch_add(1, SeqCst);
                inside.fetch_sub(1, SeqCst);
            })
            .unwrap();
        }
        let ran: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let rt = &rt;
                    scope.spawn(move || {
                        (0..STEPS)
                            .map(|_| rt.advance(Duration::from_millis(1)).unwrap())
                            .sum::<usize>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        let span = Duration::from_millis(u64::from(span));
        assert_eq!(since_start(&rt), span, "{threads} threads: the sum");
        assert_eq!(ran, span.as_millis() as usize, "{threads} threads");
        assert_eq!(runs.load(SeqCst), ran);
        assert_eq!(
            overlaps.load(SeqCst),
            0,
            "{threads} threads: overlapping callbacks"
        );
    }
}

/// `add_periodic_at` against an exact model, for starts from a millisecond to 292 million
/// years back (`i64::MIN` ms), periods from a millisecond to 584 million years
/// (`u64::MAX` ms), both policies and both modes: the first run and the one after it come
/// where the model puts them, on the schedule's grid, however far back it started.
#[test]
fn a_schedule_resumed_from_far_back_keeps_its_phase() {
    const MS: i128 = 1_000_000;
    let now_ms: i64 = 1_704_067_200_000; // start()
    let firsts = [
        now_ms,
        now_ms - 1,
        now_ms - 7,
        now_ms - 86_400_000,
        now_ms - 86_400_001,
        0,
        -1,
        -(1 << 52),
        i64::MIN / 2,
        i64::MIN + 1,
        i64::MIN,
    ];
    let periods = [
        1u64,
        3,
        1000,
        86_400_000,
        1 << 40,
        1 << 60,
        u64::MAX / 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    let policies = [
        timerwheel_core::Missed::RunOnce,
        timerwheel_core::Missed::Skip,
    ];
    let modes = [PeriodMode::FixedRate, PeriodMode::FixedDelay];
    let end = Duration::from_nanos(u64::MAX - 1_000_000); // the clock's last tick, at 1 ms
    let end_ns = i128::from(end.as_millis() as u64) * MS;
    let held = |ns: i128| Duration::from_nanos(ns.min(end_ns) as u64);
    let mut cases = 0;
    for first in firsts {
        for period in periods {
            for missed in policies {
                for mode in modes {
                    // The model, in i128 nanoseconds since the start.
                    let (first_ns, period_ns) = (
                        (i128::from(first) - i128::from(now_ms)) * MS,
                        i128::from(period) * MS,
                    );
                    let behind = -first_ns; // how far back it started, at least 0
                    let next_point = first_ns + (behind + period_ns - 1) / period_ns * period_ns;
                    let on_point = next_point == 0;
                    let (first_run, second_run) = match missed {
                        _ if on_point => (0, period_ns),
                        timerwheel_core::Missed::RunOnce => (0, next_point),
                        timerwheel_core::Missed::Skip => (next_point, next_point + period_ns),
                    };
                    let rt = virtual_runtime();
                    let log = Log::default();
                    let when = if first >= 0 {
                        SystemTime::UNIX_EPOCH + Duration::from_millis(first as u64)
                    } else {
                        SystemTime::UNIX_EPOCH - Duration::from_millis(first.unsigned_abs())
                    };
                    let task = logger(&rt, &log, "run");
                    let period_d = Duration::from_millis(period);
                    rt.add_periodic_at(when, period_d, mode, missed, task)
                        .unwrap();
                    let case = format!("first {first} period {period} {missed:?} {mode:?}");
                    assert_eq!(rt.advance_to_next(), Ok(1), "{case}");
                    assert_eq!(times(&log), [held(first_run)], "{case}: first run");
                    let second = if first_run >= end_ns {
                        None // it ran at the end; the next point lies past the range
                    } else {
                        Some(held(second_run))
                    };
                    rt.advance_to_next().unwrap();
                    assert_eq!(times(&log).get(1).copied(), second, "{case}: second run");
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 11 * 9 * 4);
}

/// An advance may end between two ticks: the clock reads its target, and a timer added
/// there with delay 0 is due at the next tick (deadlines are whole ticks, never early),
/// which `poll` (an advance by zero) does not reach and `advance_to_next` does.
#[test]
fn a_zero_delay_added_between_ticks_runs_at_the_next_tick() {
    let rt = virtual_runtime();
    let log = Log::default();
    let between = Duration::from_micros(7_333); // the default tick is 1 ms
    assert_eq!(rt.advance(between), Ok(0));
    assert_eq!(
        since_start(&rt),
        between,
        "the clock reads the advance's target"
    );
    rt.add(Duration::ZERO, logger(&rt, &log, "zero")).unwrap();
    assert_eq!(
        rt.poll(),
        Ok(0),
        "due at the next tick, not at this reading"
    );
    assert_eq!(rt.advance_to_next(), Ok(1));
    assert_eq!(times(&log), [Duration::from_millis(8)]);
}
