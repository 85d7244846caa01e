//! What an operator reads: the last-minute view beside the counters since start, and the
//! Prometheus text exposition of a runtime, written here for every interface (C's
//! `tw_metrics_text`, Python's `metrics_text()` and collector, Go's collector).

use std::collections::VecDeque;
use std::fmt::Write;
use std::time::Duration;

use super::stats::{highest, quantile, Lateness, LATENESS_BOUNDS_US};
use super::Stats;

/// The longest window of [`Runtime::stats_recent`](super::Runtime::stats_recent).
pub const MAX_WINDOW: Duration = Duration::from_secs(60);
/// The shortest window of [`Runtime::stats_recent`](super::Runtime::stats_recent).
pub const MIN_WINDOW: Duration = Duration::from_secs(1);
/// How much younger than its window a recent view's base reading may be, and half the
/// closest two kept readings follow each other: a view asked for every second spans a
/// second, give or take the caller's own jitter.
const TOLERANCE_NS: u64 = 500_000_000;

/// The counters and lateness histogram at one instant, as the recent views keep them.
pub(crate) struct Reading {
    /// Nanoseconds since the runtime started.
    pub(crate) at_ns: u64,
    pub(crate) stats: Stats,
    /// Samples per log bucket of the lateness histogram, up to the last one not empty.
    pub(crate) lateness: Box<[u64]>,
}

impl Reading {
    /// A reading of `lateness` (per log bucket) without its empty buckets at the end.
    pub(crate) fn new(at_ns: u64, stats: Stats, lateness: &[u64]) -> Self {
        let used = lateness
            .iter()
            .rposition(|&count| count != 0)
            .map_or(0, |i| i + 1);
        Reading {
            at_ns,
            stats,
            lateness: lateness[..used].into(),
        }
    }
}

/// The readings the recent views measure from: the newest at least [`MAX_WINDOW`] old
/// (the start while there is none) and those after it, kept at most two a second. They
/// are taken only by the views' own calls, so cost the timers nothing.
pub(crate) struct Window {
    readings: VecDeque<Reading>,
}

impl Window {
    /// No reading yet but the start: all zero.
    pub(crate) fn new() -> Self {
        Window {
            readings: VecDeque::from([Reading::new(0, Stats::default(), &[])]),
        }
    }

    /// The view of the last `window` (within [`MIN_WINDOW`]..=[`MAX_WINDOW`]) up to `now`, which is kept
    /// as a reading: the events counted since the base reading (the newest at least
    /// `window` old, give or take [`TOLERANCE_NS`]; the start when the runtime is younger),
    /// the lateness of the callbacks started since, and `span_ms`.
    pub(crate) fn recent(&mut self, now: Reading, window: Duration, max_late_us: u64) -> Stats {
        let max_window_ns = MAX_WINDOW.as_nanos() as u64;
        while self.readings.len() > 1 && self.readings[1].at_ns + max_window_ns <= now.at_ns {
            self.readings.pop_front();
        }
        let window_ns = window.clamp(MIN_WINDOW, MAX_WINDOW).as_nanos() as u64;
        let base = self
            .readings
            .iter()
            .rev()
            .find(|r| r.at_ns + window_ns <= now.at_ns + TOLERANCE_NS)
            .unwrap_or(&self.readings[0]);
        let counts: Vec<u64> = now
            .lateness
            .iter()
            .enumerate()
            .map(|(bucket, &count)| {
                count.saturating_sub(base.lateness.get(bucket).copied().unwrap_or(0))
            })
            .collect();
        let view = Stats {
            late_p50_us: quantile(&counts, 0.50, max_late_us),
            late_p99_us: quantile(&counts, 0.99, max_late_us),
            late_max_us: highest(&counts, max_late_us),
            span_ms: (now.at_ns - base.at_ns) / 1_000_000,
            ..now.stats.since(&base.stats)
        };
        let newest = self.readings.back().map_or(0, |r| r.at_ns);
        if now.at_ns >= newest + TOLERANCE_NS {
            self.readings.push_back(now);
        }
        view
    }
}

/// A runtime's figures for an exporter: its counters since start, its lateness histogram
/// in fixed buckets and the slow-callback threshold ([`Runtime::metrics`](super::Runtime::metrics)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    /// The counters since the runtime started.
    pub stats: Stats,
    /// The lateness of every callback started, in fixed buckets.
    pub lateness: Lateness,
    /// `Config::slow_callback`.
    pub slow_callback: Option<Duration>,
}

/// The content type of [`Metrics::prometheus_text`]: Prometheus's text format 0.0.4.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How an exported figure is typed.
#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
}

/// Every counter of [`Stats`] the exposition gives (the quantiles and `span_ms` are left
/// to the histogram and to Prometheus's own windows): its field, the metric, its type and
/// help text.
const EXPORTED: [(&str, &str, Kind, &str); 13] = [
    (
        "pending",
        "timerwheel_timers_pending",
        Kind::Gauge,
        "Timers that will run (again) unless cancelled.",
    ),
    (
        "added",
        "timerwheel_timers_added_total",
        Kind::Counter,
        "Timers accepted.",
    ),
    (
        "fired",
        "timerwheel_timers_fired_total",
        Kind::Counter,
        "Callback runs started, one-shot and periodic.",
    ),
    (
        "fired_one_shot",
        "timerwheel_timers_fired_one_shot_total",
        Kind::Counter,
        "One-shot timers whose callback started.",
    ),
    (
        "cancelled",
        "timerwheel_timers_cancelled_total",
        Kind::Counter,
        "Timers cancelled.",
    ),
    (
        "discarded",
        "timerwheel_timers_discarded_total",
        Kind::Counter,
        "Timers dropped unrun at shutdown.",
    ),
    (
        "queue_depth",
        "timerwheel_backlog",
        Kind::Gauge,
        "Timers due whose callback has not started: waiting for a worker.",
    ),
    (
        "workers",
        "timerwheel_workers",
        Kind::Gauge,
        "Worker threads now.",
    ),
    (
        "workers_peak",
        "timerwheel_workers_peak",
        Kind::Gauge,
        "Most worker threads at once.",
    ),
    (
        "workers_spawned",
        "timerwheel_workers_spawned_total",
        Kind::Counter,
        "Workers started because due callbacks backed up.",
    ),
    (
        "workers_retired",
        "timerwheel_workers_retired_total",
        Kind::Counter,
        "Workers retired after their keepalive idle.",
    ),
    (
        "callback_panics",
        "timerwheel_callback_panics_total",
        Kind::Counter,
        "Callbacks that panicked, raised or reported a failure.",
    ),
    (
        "slow_callbacks",
        "timerwheel_slow_callbacks_total",
        Kind::Counter,
        "Callbacks that ran for at least the slow-callback threshold",
    ),
];

impl Metrics {
    /// The figures in Prometheus's text format ([`PROMETHEUS_CONTENT_TYPE`]): every metric
    /// named `timerwheel_*`, counters ending in `_total`, times in seconds, the lateness as
    /// a histogram with cumulative buckets (`timerwheel_lateness_seconds`).
    pub fn prometheus_text(&self) -> String {
        let mut text = String::new();
        let fields = self.stats.fields();
        for (field, name, kind, help) in EXPORTED {
            let (_, value) = fields.iter().find(|(f, _)| *f == field).expect("a field");
            let help = match (field, self.slow_callback) {
                ("slow_callbacks", Some(threshold)) => format!("{help} ({threshold:?})."),
                ("slow_callbacks", None) => format!("{help} (unset: counts nothing)."),
                _ => help.to_owned(),
            };
            header(&mut text, name, kind, &help);
            let _ = writeln!(text, "{name} {value}");
        }
        self.write_lateness(&mut text);
        text
    }

    fn write_lateness(&self, text: &mut String) {
        let name = "timerwheel_lateness_seconds";
        let help = "Lateness of callbacks: their start minus the exact time they were due.";
        let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} histogram");
        let bounds = LATENESS_BOUNDS_US.iter().map(|&us| seconds(us));
        let les = bounds.chain(["+Inf".to_owned()]);
        for (le, count) in les.zip(self.lateness.cumulative) {
            let _ = writeln!(text, "{name}_bucket{{le=\"{le}\"}} {count}");
        }
        let _ = writeln!(text, "{name}_sum {}", seconds(self.lateness.sum_us));
        let _ = writeln!(text, "{name}_count {}", self.lateness.count());
        let max = "timerwheel_lateness_max_seconds";
        header(
            text,
            max,
            Kind::Gauge,
            "Largest lateness of a callback since start.",
        );
        let _ = writeln!(text, "{max} {}", seconds(self.stats.late_max_us));
    }
}

fn header(text: &mut String, name: &str, kind: Kind, help: &str) {
    let kind = match kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Microseconds as seconds, exactly: "0.00005", "10", "1.5".
fn seconds(us: u64) -> String {
    let (whole, fraction) = (us / 1_000_000, us % 1_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds(50), "0.00005");
        assert_eq!(seconds(2_500), "0.0025");
        assert_eq!(seconds(10_000_000), "10");
        assert_eq!(seconds(1_500_001), "1.500001");
        assert_eq!(seconds(0), "0");
    }

    #[test]
    fn every_counter_but_the_quantiles_and_the_span_is_exported() {
        let exported: Vec<_> = EXPORTED.iter().map(|(field, ..)| *field).collect();
        for (field, _) in Stats::default().fields() {
            let left_out = field.starts_with("late_") || field == "span_ms";
            assert_eq!(exported.contains(&field), !left_out, "{field}");
        }
    }

    fn reading(at_ms: u64, fired: u64, lateness: &[u64]) -> Reading {
        let stats = Stats {
            fired,
            pending: 7,
            ..Stats::default()
        };
        Reading::new(at_ms * 1_000_000, stats, lateness)
    }

    #[test]
    fn the_last_minute_counts_from_the_newest_reading_a_minute_old() {
        let minute = MAX_WINDOW;
        let mut window = Window::new();
        let first = window.recent(reading(10_000, 100, &[0, 100, 0]), minute, 1);
        assert_eq!(
            (first.fired, first.span_ms, first.pending),
            (100, 10_000, 7)
        );
        window.recent(reading(30_000, 200, &[0, 100, 100]), minute, 2);
        window.recent(reading(30_200, 250, &[0, 100, 150]), minute, 2); // too close: not kept
        let later = window.recent(reading(75_000, 300, &[0, 100, 150, 50]), minute, 3);
        // The reading at 10 s is the newest at least 60 s old.
        assert_eq!((later.fired, later.span_ms), (200, 65_000));
        assert_eq!((later.late_p50_us, later.late_max_us), (2, 3));
        let last = window.recent(reading(100_000, 300, &[0, 100, 150, 50]), minute, 3);
        assert_eq!(
            (last.fired, last.span_ms),
            (100, 70_000),
            "from the reading at 30 s"
        );
        assert_eq!(last.late_p99_us, 3);
    }

    #[test]
    fn a_view_asked_for_every_second_spans_a_second_despite_jitter() {
        let mut window = Window::new();
        let second = Duration::from_secs(1);
        let mut fired = 0;
        for at_ms in [1_000, 2_004, 2_999, 4_008, 5_001, 5_998, 7_000] {
            fired += 10;
            let view = window.recent(reading(at_ms, fired, &[fired]), second, 1);
            assert_eq!(view.fired, 10, "at {at_ms} ms");
            assert!((990..=1_010).contains(&view.span_ms), "{view:?}");
        }
        // The minute, asked in between, still counts from the start.
        let minute = window.recent(reading(7_500, fired, &[fired]), MAX_WINDOW, 1);
        assert_eq!((minute.fired, minute.span_ms), (70, 7_500));
    }

    #[test]
    fn a_reading_keeps_no_empty_buckets_at_its_end() {
        assert_eq!(
            &*Reading::new(0, Stats::default(), &[0, 3, 0, 0]).lateness,
            &[0, 3]
        );
        assert!(Reading::new(0, Stats::default(), &[0, 0])
            .lateness
            .is_empty());
    }
}
