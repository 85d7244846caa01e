//! What an operator reads: the slow-callback counter, the last-minute view and the
//! Prometheus text, checked against the counters on manual runtimes (no threads).

use std::collections::HashMap;
use std::thread;
use std::time::Duration;

use timerwheel_core::{Runtime, LATENESS_BOUNDS_US, MAX_WINDOW};

fn manual(slow_callback: Option<Duration>) -> Runtime {
    let builder = Runtime::builder().manual(true);
    match slow_callback {
        Some(threshold) => builder.slow_callback(threshold),
        None => builder,
    }
    .build()
    .unwrap()
}

/// Adds `sleeps.len()` timers due at once, each sleeping its time, and runs them.
fn run_sleepers(runtime: &Runtime, sleeps: &[u64]) {
    for &ms in sleeps {
        let sleep = Duration::from_millis(ms);
        runtime
            .after(Duration::ZERO, move |_| thread::sleep(sleep))
            .unwrap();
    }
    thread::sleep(Duration::from_millis(3));
    assert_eq!(runtime.poll().unwrap(), sleeps.len());
}

#[test]
fn a_callback_at_least_as_long_as_the_threshold_is_slow() {
    let watched = manual(Some(Duration::from_millis(30)));
    run_sleepers(&watched, &[0, 40, 1, 60]);
    assert_eq!(watched.stats().slow_callbacks, 2);
    let unwatched = manual(None);
    run_sleepers(&unwatched, &[0, 40]);
    assert_eq!(
        unwatched.stats().slow_callbacks,
        0,
        "no threshold, nothing counted"
    );
}

/// The samples of a text exposition: `name{labels}` to value. Checks each line's shape.
fn samples(text: &str) -> HashMap<String, f64> {
    let mut samples = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, value) = line.rsplit_once(' ').expect("a sample is `name value`");
        assert!(name.starts_with("timerwheel_"), "{line}");
        let value: f64 = value.parse().expect("a number");
        assert!(
            samples.insert(name.to_owned(), value).is_none(),
            "twice: {name}"
        );
    }
    samples
}

#[test]
fn the_text_gives_the_counters_and_cumulative_lateness_buckets() {
    let runtime = manual(Some(Duration::from_millis(5)));
    let cancelled = runtime.after(Duration::from_secs(60), |_| {}).unwrap();
    assert!(cancelled.cancel());
    run_sleepers(&runtime, &[0, 0, 10]);
    runtime.after(Duration::from_secs(60), |_| {}).unwrap();
    let text = runtime.prometheus_text();
    let stats = runtime.stats();
    let s = samples(&text);
    assert_eq!(s["timerwheel_timers_added_total"], stats.added as f64);
    assert_eq!(s["timerwheel_timers_added_total"], 5.0);
    assert_eq!(s["timerwheel_timers_fired_total"], 3.0);
    assert_eq!(s["timerwheel_timers_cancelled_total"], 1.0);
    assert_eq!(s["timerwheel_timers_pending"], 1.0);
    assert_eq!(s["timerwheel_slow_callbacks_total"], 1.0);
    assert_eq!(s["timerwheel_backlog"], 0.0);
    let buckets: Vec<f64> = LATENESS_BOUNDS_US
        .iter()
        .map(|&us| format!("{}", us as f64 / 1e6))
        .chain(["+Inf".to_owned()])
        .map(|le| s[&format!("timerwheel_lateness_seconds_bucket{{le=\"{le}\"}}")])
        .collect();
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    assert_eq!(buckets.last(), Some(&3.0));
    assert_eq!(s["timerwheel_lateness_seconds_count"], 3.0);
    // Each ran at least 3 ms late (run_sleepers sleeps before it polls), and the last two
    // after the 10 ms sleeper.
    assert_eq!(buckets[0], 0.0, "none within 50 us");
    assert!(s["timerwheel_lateness_seconds_sum"] >= 0.009);
    assert!(text.contains("# TYPE timerwheel_lateness_seconds histogram\n"));
    assert!(text.contains("# TYPE timerwheel_timers_added_total counter\n"));
    assert!(text.contains("(5ms)"), "the help text gives the threshold");
}

#[test]
fn a_recent_view_counts_since_the_start_while_the_runtime_is_younger() {
    let runtime = manual(None);
    run_sleepers(&runtime, &[0, 0]);
    let first = runtime.stats_recent(MAX_WINDOW);
    run_sleepers(&runtime, &[0]);
    let since_start = runtime.stats();
    let view = runtime.stats_recent(MAX_WINDOW);
    assert_eq!((first.fired, view.fired), (2, 3));
    assert_eq!(view.added, since_start.added);
    assert!(view.span_ms <= since_start.span_ms + 1);
    assert!(view.late_p50_us >= 3_000, "{view:?}");
    assert!(view.late_max_us <= since_start.late_max_us);
    let beyond = runtime.stats_recent(MAX_WINDOW * 10);
    assert_eq!(beyond.fired, 3, "a longer window is the longest kept");
}

#[test]
fn a_one_second_view_counts_only_what_followed_its_base() {
    let runtime = manual(None);
    run_sleepers(&runtime, &[0, 0]);
    thread::sleep(Duration::from_millis(600));
    let second = Duration::from_secs(1);
    assert_eq!(runtime.stats_recent(second).fired, 2, "since the start");
    thread::sleep(Duration::from_millis(1_100));
    run_sleepers(&runtime, &[0]);
    let view = runtime.stats_recent(second);
    assert_eq!(view.fired, 1, "{view:?}");
    assert!(view.span_ms >= 1_100 && view.span_ms + 500 < runtime.stats().span_ms);
    let shorter = runtime.stats_recent(Duration::ZERO);
    assert!(shorter.span_ms >= 500, "a second at least: {shorter:?}");
}
