//! Counters and the lateness histogram.

/// A snapshot of a runtime's counters. At any quiet moment
/// `added == fired_one_shot + cancelled + pending + discarded`.
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
    /// Due timers waiting for a worker.
    pub queue_depth: u64,
    /// Median lateness (callback start minus deadline), microseconds.
    pub late_p50_us: u64,
    /// 99th percentile lateness, microseconds.
    pub late_p99_us: u64,
    /// Largest lateness seen, microseconds.
    pub late_max_us: u64,
    /// Callbacks that panicked (or raised).
    pub callback_panics: u64,
}
