//! W9 (docs/benchmarks.md): throughput. A producer thread adds timers due `DELAY` after now
//! at a rising rate, each callback only recording its lateness; each rate runs for a step
//! of its own with a fresh histogram. The figure is the highest rate whose p99 lateness
//! stays under 5 ms while the producer kept up with it. The same producer drives every
//! implementation through `add`.

use std::time::{Duration, Instant};

use super::{Lateness, Row};

const DELAY: Duration = Duration::from_millis(1);
const P99_LIMIT_US: u64 = 5_000;
const FIRST_RATE: f64 = 5_000.0;
const RATE_STEP: f64 = 1.5;
const LAST_RATE: f64 = 10_000_000.0;
/// A step whose callbacks have not all run this long after its last add failed.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// What one rate gave.
struct Step {
    rate: f64,
    achieved: f64,
    p99_us: u64,
    added: usize,
}

impl Step {
    fn passed(&self) -> bool {
        self.p99_us < P99_LIMIT_US && self.achieved >= 0.95 * self.rate
    }
}

/// Runs the rising rates through `add(due, lateness)`, which must arrange for
/// `lateness.record(due, now)` to run at `due`.
pub fn run(
    name: &'static str,
    baseline: bool,
    quick: bool,
    mut add: impl FnMut(Instant, &'static Lateness),
) -> Row {
    let length = Duration::from_millis(if quick { 300 } else { 1000 });
    let mut best: Option<Step> = None;
    let mut failed = None;
    let mut added = 0;
    let mut rate = FIRST_RATE;
    while rate <= LAST_RATE {
        let step = run_step(rate, length, &mut add);
        added += step.added;
        if !step.passed() {
            failed = Some(step);
            break;
        }
        best = Some(step);
        rate *= RATE_STEP;
    }
    let best_rate = best.as_ref().map_or(0.0, |s| s.rate);
    let best_p99 = best.as_ref().map_or(0, |s| s.p99_us);
    Row::new(name, baseline, "W9", added)
        .with("max_rate", best_rate.round())
        .with("late_p99_us_at_max", best_p99 as f64)
        .with("next_rate", failed.as_ref().map_or(0.0, |s| s.rate.round()))
        .with(
            "next_achieved",
            failed.as_ref().map_or(0.0, |s| s.achieved.round()),
        )
        .with("next_late_p99_us", failed.map_or(0, |s| s.p99_us) as f64)
}

/// Adds at `rate` a second for `length`, then waits for every callback.
fn run_step(rate: f64, length: Duration, add: &mut impl FnMut(Instant, &'static Lateness)) -> Step {
    // Leaked: a callback still queued at the end of a failed step may record into it.
    let lateness: &'static Lateness = Box::leak(Box::default());
    let start = Instant::now();
    let mut added = 0usize;
    loop {
        let elapsed = start.elapsed();
        if elapsed >= length {
            break;
        }
        let target = (rate * elapsed.as_secs_f64()) as usize;
        if added >= target {
            std::thread::sleep(Duration::from_micros(50));
            continue;
        }
        for _ in added..target {
            add(Instant::now() + DELAY, lateness);
        }
        added = target;
    }
    let achieved = added as f64 / start.elapsed().as_secs_f64();
    let give_up = Instant::now() + DELAY + DRAIN_LIMIT;
    while lateness.count() < added as u64 && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(5));
    }
    let p99_us = match lateness.count() < added as u64 {
        true => u64::MAX,
        false => lateness.percentile(99),
    };
    Step {
        rate,
        achieved,
        p99_us,
        added,
    }
}
