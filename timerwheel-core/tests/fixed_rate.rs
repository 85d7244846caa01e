//! Fixed-rate schedules against their exact points `delay + n·period`, and lateness measured
//! from the exact time a timer was due. Each test records when its runs start and end and
//! checks them against the points the test computes from an instant taken just before the
//! add (so a test's point is never later than the runtime's).
//!
//! The machine may be loaded, and a loaded machine loses runs (their points are coalesced)
//! and starts them late. So the bounds on counts and lateness sit between what the schedule
//! before exact points could reach at best (a bound that no load improves) and what exact
//! points give on a quiet machine.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use timerwheel_core::{BoxTask, Config, PeriodMode, Runtime, TimerId};

/// When each run of a timer started and ended.
type Runs = Arc<Mutex<Vec<(Instant, Instant)>>>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn runtime(tick: Duration) -> Runtime<BoxTask> {
    let config = Config {
        tick,
        max_workers: 2,
        ..Config::default()
    };
    Runtime::new(config).unwrap()
}

/// Adds a fixed-rate timer whose runs take `work(n)` each (run `n` counted from 0) and
/// records them; returns the instant the schedule counts from, the id and the record.
fn record_fixed_rate(
    rt: &Runtime<BoxTask>,
    delay: Duration,
    period: Duration,
    work: impl Fn(usize) -> Duration + Send + 'static,
) -> (Instant, TimerId, Runs) {
    let runs: Runs = Arc::new(Mutex::new(Vec::with_capacity(4096)));
    let seen = Arc::clone(&runs);
    let task = Box::new(move |_| {
        let start = Instant::now();
        let n = seen.lock().unwrap().len();
        busy_until(start + work(n));
        seen.lock().unwrap().push((start, Instant::now()));
    });
    let origin = Instant::now();
    let id = rt
        .add_periodic(delay, period, PeriodMode::FixedRate, task)
        .unwrap();
    (origin, id, runs)
}

/// Sleeps to just before `until`, then spins: a run takes what the test says, not a sleep's
/// overshoot more.
fn busy_until(until: Instant) {
    let now = Instant::now();
    if until > now + ms(1) {
        thread::sleep(until - now - ms(1));
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Stops the timer after `span` and hands back what was recorded.
fn stop_after(
    rt: &Runtime<BoxTask>,
    id: TimerId,
    runs: &Runs,
    origin: Instant,
    span: Duration,
) -> Vec<(Instant, Instant)> {
    thread::sleep((origin + span).saturating_duration_since(Instant::now()));
    rt.cancel_sync(id).unwrap();
    let runs = runs.lock().unwrap().clone();
    runs
}

/// The `n`-th point of a schedule (from 0).
fn point(origin: Instant, delay: Duration, period: Duration, n: usize) -> Instant {
    origin + delay + period * n as u32
}

/// Checks that run `n` did not start before the `n`-th point: a run is never early, and the
/// points it stands for only move later when missed ones are coalesced.
fn assert_never_early(
    runs: &[(Instant, Instant)],
    origin: Instant,
    delay: Duration,
    period: Duration,
) {
    for (n, &(start, _)) in runs.iter().enumerate() {
        let due = point(origin, delay, period, n);
        assert!(start >= due, "run {n} started {:?} early", due - start);
    }
}

/// Tick 300 us, period 1 ms, 2 s: 2000 points. With the period rounded up to 4 ticks, runs
/// were 1.2 ms apart at best: 1,667 runs at most, whatever the load (a quiet machine gives
/// about 2000 now; a loaded one coalesces some points, 1,618 runs once on a loaded CI
/// machine: so up to three tries, and one of 1,700 runs or more passes, which the
/// drifting schedule never reaches).
#[test]
fn a_period_off_the_tick_grid_does_not_drift() {
    let (tick, delay, period, span) = (Duration::from_micros(300), ms(1), ms(1), ms(2000));
    let try_once = || {
        let rt = runtime(tick);
        let (origin, id, runs) = record_fixed_rate(&rt, delay, period, |_| Duration::ZERO);
        let runs = stop_after(&rt, id, &runs, origin, span);
        (rt, origin, runs)
    };
    let (mut rt, mut origin, mut runs) = try_once();
    for _ in 1..3 {
        if runs.len() >= 1700 {
            break;
        }
        (rt, origin, runs) = try_once();
    }
    let points = ((span - delay).as_nanos() / period.as_nanos()) as usize + 1;
    assert!(
        runs.len() >= 1700 && runs.len() <= points + 1,
        "{} runs in {span:?}, {points} points",
        runs.len()
    );
    assert_never_early(&runs, origin, delay, period);

    // A run's point is on the grid and not after its start, so its start minus the latest
    // grid point before it is a lower bound of its lateness: 0.2 ms more for each run of
    // the drifting schedule (mod 1 ms), what the rounding to the tick adds for exact points.
    // The runtime's lateness, from the exact point, is not below it.
    let mut least_late: Vec<Duration> = runs
        .iter()
        .map(|&(start, _)| since_grid(start - origin - delay, period))
        .collect();
    least_late.sort();
    let least_p99 = least_late[least_late.len() * 99 / 100];
    let reported_p99 = Duration::from_micros(rt.stats().late_p99_us);
    assert!(
        reported_p99 + Duration::from_micros(100) >= least_p99,
        "late_p99 reads {reported_p99:?}, the runs were at least {least_p99:?} late"
    );
}

/// How far `offset` lies after the latest multiple of `period` at or before it.
fn since_grid(offset: Duration, period: Duration) -> Duration {
    Duration::from_nanos((offset.as_nanos() % period.as_nanos()) as u64)
}

/// Period 10 ms, each run 10.3 ms: the runs go back to back, about 97 in 1 s. When the
/// next run waited for the point after the return, runs were 20 ms apart (50 in 1 s): the
/// timer was busy 10.3 ms of every 20. Busy time rather than a count, as a loaded machine
/// stretches the runs themselves.
#[test]
fn a_run_due_while_the_previous_one_ran_starts_when_it_returns() {
    let (delay, period, span) = (ms(10), ms(10), ms(1000));
    let rt = runtime(ms(1));
    let work = Duration::from_micros(10_300);
    let (origin, id, runs) = record_fixed_rate(&rt, delay, period, move |_| work);
    let runs = stop_after(&rt, id, &runs, origin, span);
    assert_never_early(&runs, origin, delay, period);
    let busy: Duration = runs.iter().map(|&(start, end)| end - start).sum();
    let whole = runs[runs.len() - 1].1 - runs[0].0;
    assert!(
        busy.as_secs_f64() >= 0.75 * whole.as_secs_f64(),
        "{} runs of {work:?} kept the timer busy {busy:?} of {whole:?}",
        runs.len()
    );
}

/// Period 100 ms; run 2 (due at 300 ms) takes 3.5 periods and returns at 650 ms. The
/// points at 400 and 500 ms passed entirely, the one at 600 ms is due: it runs at once, and
/// the schedule goes on at 700, 800, ...
#[test]
fn points_missed_entirely_are_coalesced_and_the_grid_stays() {
    let (delay, period) = (ms(100), ms(100));
    let rt = runtime(ms(1));
    let stall = period * 7 / 2;
    let (origin, id, runs) = record_fixed_rate(&rt, delay, period, move |n| {
        if n == 2 {
            stall
        } else {
            Duration::ZERO
        }
    });
    let runs = stop_after(&rt, id, &runs, origin, ms(850));
    assert!(runs.len() >= 6, "{} runs", runs.len());
    let at = |n| point(origin, delay, period, n);
    let returned = runs[2].1;
    assert!(returned >= at(5) && returned < at(6));
    let (caught_up, _) = runs[3];
    assert!(
        caught_up >= at(5) && caught_up < at(6),
        "the run due at the stall's return started {:?} after it, not at once",
        caught_up - returned
    );
    for (k, &(start, _)) in runs[4..6].iter().enumerate() {
        let due = at(6 + k);
        assert!(
            start >= due && start < due + period,
            "run {} started {:?} after the point of the original grid it stands for",
            4 + k,
            start.saturating_duration_since(due)
        );
    }
}

#[test]
fn lateness_counts_from_the_exact_deadline_not_its_tick() {
    // A 200 ms tick: a timer due 1 ms after the add fires at the next tick, about 199 ms
    // after it was due, though only just after its tick began.
    let config = Config {
        manual: true,
        tick: ms(200),
        ..Config::default()
    };
    let rt = Runtime::<BoxTask>::new(config).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    rt.after(ms(1), move |_| tx.send(()).unwrap()).unwrap();
    while rx.try_recv().is_err() {
        thread::sleep(rt.next_timeout().unwrap_or(ms(1)));
        rt.poll().unwrap();
    }
    let late = rt.stats().late_max_us;
    assert!(late >= 150_000, "late_max_us reads {late}");
}
