//! What every benchmark shares: a seeded RNG, process measurements, the lateness
//! recorder, and the report (JSON lines, then a table of ratios).
#![allow(dead_code)]

pub mod heap_timer;
pub mod w9;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// splitmix64: a fixed seed gives the same workload to every implementation.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [low, high).
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low)
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// Resident set size of this process, bytes.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// CPU time this process has used, summed over its threads from the scheduler's
/// nanosecond counters (/proc/self/stat counts in 10 ms ticks: too coarse for W4).
pub fn cpu_time() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten();
    let nanos: u64 = tasks
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// Nanoseconds per item of a phase.
pub fn per_item(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_nanos() as f64 / n as f64
}

/// Lateness samples in microseconds: one relaxed add per sample into linear buckets up
/// to 10 s, so callbacks on many threads record without a lock.
pub struct Lateness {
    buckets: Vec<AtomicU64>,
    max: AtomicU64,
    /// All records, so that waiting for the count does not scan the buckets.
    count: AtomicU64,
}

const LATENESS_RANGE_US: usize = 10_000_000;

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: (0..=LATENESS_RANGE_US / 10)
                .map(|_| AtomicU64::new(0))
                .collect(),
            max: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

impl Lateness {
    /// Records how late `now` is for `deadline` (early counts as 0).
    pub fn record(&self, deadline: Instant, now: Instant) {
        let us = now.saturating_duration_since(deadline).as_micros() as u64;
        let bucket = (us as usize / 10).min(self.buckets.len() - 1);
        self.buckets[bucket].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        if us > self.max.load(Relaxed) {
            self.max.fetch_max(us, Relaxed);
        }
    }

    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    /// The `p`-th percentile (1 <= p <= 100), microseconds, by nearest rank: the sample of
    /// rank ceil(p/100 * n), counting from 1 (docs/benchmarks.md), to 10 us: the upper end
    /// of its bucket, or the maximum if lower.
    pub fn percentile(&self, p: u64) -> u64 {
        let total = self.count();
        let rank = (total * p).div_ceil(100).max(1);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Relaxed);
            if seen >= rank {
                return (i as u64 * 10 + 9).min(self.max());
            }
        }
        self.max()
    }

    pub fn max(&self) -> u64 {
        self.max.load(Relaxed)
    }

    /// Counts per bucket, for plots.
    pub fn histogram(&self) -> Vec<u64> {
        self.buckets.iter().map(|b| b.load(Relaxed)).collect()
    }

    /// Writes the histogram to `$TW_BENCH_DIR/<stem>.csv` (`bucket_us,count` lines, the
    /// lower bound of each non-empty 10 us bucket) when that variable is set, for plots.
    pub fn dump(&self, stem: &str) {
        let Some(dir) = std::env::var_os("TW_BENCH_DIR") else {
            return;
        };
        let mut csv = String::from("bucket_us,count\n");
        for (i, count) in self.histogram().into_iter().enumerate() {
            if count > 0 {
                let _ = writeln!(csv, "{},{count}", i * 10);
            }
        }
        let path = std::path::Path::new(&dir).join(format!("{stem}.csv"));
        if let Err(e) = std::fs::write(&path, csv) {
            eprintln!("cannot write {}: {e}", path.display());
        }
    }
}

/// One measured result: an implementation's figures on a workload.
pub struct Row {
    pub implementation: &'static str,
    pub baseline: bool,
    pub workload: &'static str,
    pub n: usize,
    pub figures: Vec<(&'static str, f64)>,
}

impl Row {
    pub fn new(
        implementation: &'static str,
        baseline: bool,
        workload: &'static str,
        n: usize,
    ) -> Self {
        Row {
            implementation,
            baseline,
            workload,
            n,
            figures: Vec::new(),
        }
    }

    pub fn with(mut self, name: &'static str, value: f64) -> Self {
        self.figures.push((name, value));
        self
    }

    pub fn get(&self, name: &str) -> Option<f64> {
        self.figures
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }

    /// Prints the row as one JSON object on a line.
    pub fn emit(&self) {
        let mut line = format!(
            "{{\"impl\": \"{}\", \"baseline\": {}, \"workload\": \"{}\", \"n\": {}",
            self.implementation, self.baseline, self.workload, self.n
        );
        for (name, value) in &self.figures {
            let _ = write!(line, ", \"{name}\": {value:.4}");
        }
        println!("{line}}}");
    }
}

/// A comparison for the table: ours / baseline on one figure, with the target ratio.
pub struct Ratio {
    pub what: String,
    pub ours: f64,
    pub baseline: f64,
    pub target: Option<f64>,
}

impl Ratio {
    pub fn of(
        rows: &[Row],
        workload: &str,
        figure: &str,
        ours: &str,
        baseline: &str,
    ) -> Option<Ratio> {
        let pick = |name: &str| {
            rows.iter()
                .find(|r| r.workload == workload && r.implementation == name)
                .and_then(|r| r.get(figure))
        };
        Some(Ratio {
            what: format!("{workload} {figure}: {ours} / {baseline}"),
            ours: pick(ours)?,
            baseline: pick(baseline)?,
            target: None,
        })
    }

    pub fn target(mut self, target: f64) -> Self {
        self.target = Some(target);
        self
    }
}

/// Prints the ratios as a table for people.
pub fn print_table(title: &str, ratios: &[Ratio]) {
    println!("\n{title}");
    println!(
        "{:<58} {:>12} {:>12} {:>8} {:>8}",
        "comparison", "ours", "baseline", "ratio", "target"
    );
    for r in ratios {
        let ratio = r.ours / r.baseline;
        let target = r.target.map_or(String::from("-"), |t| format!("<={t}"));
        let verdict = match r.target {
            Some(t) if ratio > t => " (missed)",
            _ => "",
        };
        println!(
            "{:<58} {:>12.1} {:>12.1} {:>7.2}x {:>8}{verdict}",
            r.what, r.ours, r.baseline, ratio, target
        );
    }
}
