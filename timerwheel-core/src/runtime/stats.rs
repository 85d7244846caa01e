//! Counters and the lateness histogram.

/// A snapshot of a runtime's counters. At any quiet moment
/// `added == fired_one_shot + cancelled + pending + discarded`.
///
/// [`Runtime::stats`](super::Runtime::stats) counts since the runtime started;
/// [`Runtime::stats_recent`](super::Runtime::stats_recent) counts the events of a recent
/// window (`span_ms` says how long exactly), with the gauges (`pending`, `workers`,
/// `queue_depth`) as they are now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Timers in the wheel or queued or running that will run (again) unless cancelled.
    pub pending: u64,
    /// Timers ever accepted.
    pub added: u64,
    /// Callback runs started (one-shot and periodic).
    pub fired: u64,
    /// One-shot timers whose run started.
    pub fired_one_shot: u64,
    /// Timers stopped by cancel.
    pub cancelled: u64,
    /// Timers dropped unrun at shutdown.
    pub discarded: u64,
    /// Worker threads now.
    pub workers: u64,
    /// Most worker threads at once.
    pub workers_peak: u64,
    /// Workers started by the monitor because work backed up (beyond min_workers).
    pub workers_spawned: u64,
    /// Workers retired after worker_keepalive idle.
    pub workers_retired: u64,
    /// Due timers waiting for a worker, counting those deleted or reset since they were
    /// queued, which a worker takes without starting them.
    pub queue_depth: u64,
    /// Median lateness (callback start minus the exact time it was due, not its tick),
    /// microseconds.
    pub late_p50_us: u64,
    /// 99th percentile lateness, microseconds.
    pub late_p99_us: u64,
    /// Largest lateness seen, microseconds.
    pub late_max_us: u64,
    /// Callbacks that panicked (or raised), and drops of tasks that panicked (a panic is
    /// caught and counted there too; nothing else follows from it: a periodic timer whose
    /// callback panics keeps its schedule).
    pub callback_panics: u64,
    /// Callbacks that ran for at least `Config::slow_callback` (0 while it is unset).
    pub slow_callbacks: u64,
    /// How long the counters cover, in milliseconds: since the runtime started, or the
    /// span of a recent view.
    pub span_ms: u64,
}

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// `[(name, value), ...]` of the fields of a [`Stats`] named here, in this order: the
/// pattern does not compile while a field is left out.
macro_rules! named_fields {
    ($stats:expr; $($field:ident),* $(,)?) => {{
        let Stats { $($field),* } = $stats;
        [$((stringify!($field), $field)),*]
    }};
}

impl Stats {
    /// Every counter under its name, in the order of the struct. The one list of the
    /// counters: C's `tw_stats` has these fields in this order, Python's `stats()` these
    /// keys, Go's `Stats` these fields in CamelCase (a test in each compares).
    pub fn fields(&self) -> [(&'static str, u64); 17] {
        named_fields!(*self;
            pending, added, fired, fired_one_shot, cancelled, discarded, workers, workers_peak,
            workers_spawned, workers_retired, queue_depth, late_p50_us, late_p99_us,
            late_max_us, callback_panics, slow_callbacks, span_ms,
        )
    }

    /// The events counted since `base` (an earlier snapshot of the same runtime): the
    /// counters of events minus `base`'s (never below 0); the gauges and lateness as in
    /// `self`.
    pub(crate) fn since(&self, base: &Stats) -> Stats {
        Stats {
            added: self.added.saturating_sub(base.added),
            fired: self.fired.saturating_sub(base.fired),
            fired_one_shot: self.fired_one_shot.saturating_sub(base.fired_one_shot),
            cancelled: self.cancelled.saturating_sub(base.cancelled),
            discarded: self.discarded.saturating_sub(base.discarded),
            workers_spawned: self.workers_spawned.saturating_sub(base.workers_spawned),
            workers_retired: self.workers_retired.saturating_sub(base.workers_retired),
            callback_panics: self.callback_panics.saturating_sub(base.callback_panics),
            slow_callbacks: self.slow_callbacks.saturating_sub(base.slow_callbacks),
            ..*self
        }
    }
}

/// Counters kept per shard, under the shard's lock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) added: u64,
    pub(crate) fired: u64,
    pub(crate) fired_one_shot: u64,
    pub(crate) cancelled: u64,
    pub(crate) discarded: u64,
}

impl Counters {
    pub(crate) fn add_to(&self, stats: &mut Stats) {
        stats.added += self.added;
        stats.fired += self.fired;
        stats.fired_one_shot += self.fired_one_shot;
        stats.cancelled += self.cancelled;
        stats.discarded += self.discarded;
        stats.pending += self.added - self.fired_one_shot - self.cancelled - self.discarded;
    }
}

/// Values below this get a bucket each.
const LINEAR: u64 = 16;
/// Each power of two above is split in 2^SUB_BITS buckets (12.5 % relative error).
const SUB_BITS: u32 = 3;
const BUCKETS: usize = LINEAR as usize + (64 - 4) * (1 << SUB_BITS);

/// A log-bucket histogram of microseconds for the quantiles, beside the fixed buckets of
/// the exposition ([`LATENESS_BOUNDS_US`]) and the sum: a few relaxed atomic adds per
/// sample, cheap enough to keep on always.
pub(crate) struct Histogram {
    buckets: Box<[AtomicU64]>,
    /// Samples per fixed bucket (not cumulative), the last one past every bound.
    fixed: [AtomicU64; LATENESS_BOUNDS_US.len() + 1],
    sum: AtomicU64,
    max: AtomicU64,
}

impl Histogram {
    pub(crate) fn new() -> Self {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            fixed: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }

    pub(crate) fn record(&self, value: u64) {
        self.buckets[bucket_of(value)].fetch_add(1, Relaxed);
        let fixed = LATENESS_BOUNDS_US.partition_point(|&bound| bound < value);
        self.fixed[fixed].fetch_add(1, Relaxed);
        self.sum.fetch_add(value, Relaxed);
        // Read first: a new maximum is rare, and a read keeps the line shared.
        if value > self.max.load(Relaxed) {
            self.max.fetch_max(value, Relaxed);
        }
    }

    pub(crate) fn max(&self) -> u64 {
        self.max.load(Relaxed)
    }

    /// The samples per log bucket now.
    pub(crate) fn counts(&self) -> Box<[u64]> {
        self.buckets.iter().map(|b| b.load(Relaxed)).collect()
    }

    /// The values at quantiles `qs` (each 0..=1): the upper edges of their buckets, capped
    /// by the max, all from one reading of the buckets (so they are ordered as `qs` are),
    /// taken on the stack: a stats call allocates nothing. The buckets above the max's are
    /// empty and not read (the max is read first: a sample recorded since may be left out,
    /// as if the reading were taken a moment earlier).
    pub(crate) fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [u64; N] {
        let max = self.max();
        let used = bucket_of(max) + 1;
        let mut counts = [0; BUCKETS];
        for (count, bucket) in counts[..used].iter_mut().zip(self.buckets.iter()) {
            *count = bucket.load(Relaxed);
        }
        qs.map(|q| quantile(&counts[..used], q, max))
    }

    /// The fixed buckets, cumulative as the exposition gives them, and the sum.
    pub(crate) fn lateness(&self) -> Lateness {
        let mut cumulative = [0; LATENESS_BOUNDS_US.len() + 1];
        let mut seen = 0;
        for (bucket, count) in cumulative.iter_mut().zip(&self.fixed) {
            seen += count.load(Relaxed);
            *bucket = seen;
        }
        Lateness {
            cumulative,
            sum_us: self.sum.load(Relaxed),
        }
    }
}

/// The upper bounds of the lateness histogram's buckets, in microseconds (a last bucket,
/// +Inf, holds what is later than every bound).
pub const LATENESS_BOUNDS_US: [u64; 17] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// The lateness of the callbacks started since the runtime started, in the fixed buckets
/// of [`LATENESS_BOUNDS_US`], as Prometheus takes a histogram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lateness {
    /// Callbacks whose lateness was at most each bound, then (the last) all of them:
    /// cumulative, so never decreasing.
    pub cumulative: [u64; LATENESS_BOUNDS_US.len() + 1],
    /// The sum of their lateness, microseconds.
    pub sum_us: u64,
}

impl Lateness {
    /// How many callbacks the histogram holds.
    pub fn count(&self) -> u64 {
        self.cumulative[LATENESS_BOUNDS_US.len()]
    }
}

/// The value at quantile `q` (0..=1) of samples counted per log bucket: the upper edge of
/// its bucket, capped by `max`; 0 when there is none.
pub(crate) fn quantile(counts: &[u64], q: f64, max: u64) -> u64 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0;
    }
    let rank = ((total as f64 * q).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (bucket, &count) in counts.iter().enumerate() {
        seen += count;
        if seen >= rank {
            return bucket_upper(bucket).min(max);
        }
    }
    max
}

/// The largest sample counted per log bucket, as far as the buckets tell (the upper edge
/// of the last one not empty), capped by `max`.
pub(crate) fn highest(counts: &[u64], max: u64) -> u64 {
    counts
        .iter()
        .rposition(|&count| count != 0)
        .map_or(0, |bucket| bucket_upper(bucket).min(max))
}

fn bucket_of(value: u64) -> usize {
    if value < LINEAR {
        return value as usize;
    }
    let msb = 63 - value.leading_zeros();
    let sub = (value >> (msb - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    LINEAR as usize + ((msb - 4) << SUB_BITS) as usize + sub as usize
}

fn bucket_upper(bucket: usize) -> u64 {
    if bucket < LINEAR as usize {
        return bucket as u64;
    }
    let offset = bucket - LINEAR as usize;
    let msb = (offset >> SUB_BITS) as u32 + 4;
    let sub = (offset & ((1 << SUB_BITS) - 1)) as u64;
    let width = 1u64 << (msb - SUB_BITS);
    ((1u64 << msb) + sub * width).saturating_add(width - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_name_each_counter_once() {
        let stats = Stats {
            pending: 1,
            late_max_us: 2,
            ..Stats::default()
        };
        let fields = stats.fields();
        assert_eq!(fields[0], ("pending", 1));
        assert!(fields.contains(&("late_max_us", 2)));
        let mut names: Vec<_> = fields.iter().map(|(name, _)| name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), fields.len());
    }

    #[test]
    fn buckets_bound_their_values() {
        for value in (0..5000).chain([u64::MAX / 3, u64::MAX]) {
            let bucket = bucket_of(value);
            assert!(bucket < BUCKETS);
            assert!(bucket_upper(bucket) >= value);
            assert!(bucket_upper(bucket) - value <= value / 8 + 1, "{value}");
        }
    }

    #[test]
    fn fixed_buckets_are_cumulative_and_bound_their_samples() {
        let h = Histogram::new();
        for v in [
            0,
            50,
            51,
            100,
            999,
            1_000,
            1_001,
            10_000_000,
            10_000_001,
            u64::MAX / 4,
        ] {
            h.record(v);
        }
        let lateness = h.lateness();
        let at = |bound| lateness.cumulative[LATENESS_BOUNDS_US.binary_search(&bound).unwrap()];
        assert_eq!(at(50), 2, "a bound holds the samples equal to it");
        assert_eq!(at(100), 4);
        assert_eq!(at(500), 4);
        assert_eq!(at(1_000), 6);
        assert_eq!(at(10_000_000), 8);
        assert_eq!(lateness.count(), 10);
        assert!(lateness.cumulative.windows(2).all(|w| w[0] <= w[1]));
        let small_sum: u64 = [50, 51, 100, 999, 1_000, 1_001, 10_000_000, 10_000_001]
            .iter()
            .sum();
        assert_eq!(lateness.sum_us, small_sum + u64::MAX / 4);
    }

    #[test]
    fn quantiles_read_below_the_max_agree_with_a_reading_of_every_bucket() {
        let h = Histogram::new();
        assert_eq!(h.quantiles([0.5, 1.0]), [0, 0]);
        for v in [0, 3, 17, 1_000, 1 << 40, u64::MAX - 1, u64::MAX] {
            h.record(v);
            let qs = [0.0, 0.25, 0.5, 0.99, 1.0];
            let all = qs.map(|q| quantile(&h.counts(), q, h.max()));
            assert_eq!(h.quantiles(qs), all, "after {v}");
        }
    }

    #[test]
    fn quantiles_follow_the_samples() {
        let h = Histogram::new();
        for v in 1..=1000 {
            h.record(v);
        }
        let [p50, p99, p100] = h.quantiles([0.5, 0.99, 1.0]);
        assert!((450..=570).contains(&p50), "{p50}");
        assert!(p99 >= 990);
        assert_eq!(p100, 1000);
        assert_eq!(h.max(), 1000);
    }
}
