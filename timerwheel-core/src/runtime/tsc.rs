//! A cheap reading of `CLOCK_MONOTONIC` for the deadlines of adds and resets: the
//! processor's time-stamp counter, scaled from an anchor (a counter value and the
//! monotonic time read with it) that is at most [`ANCHOR_AGE_NS`] old. It costs a third of
//! a `clock_gettime` call, which is most of an add's price.
//!
//! It is only ever early with the reading, never behind: a deadline computed from it can
//! come a little late (by at most about [`MARGIN_NS`]), never early. Why it never lags:
//! - the scale (nanoseconds per count) is measured between the first anchor and the newest,
//!   reading the monotonic clock *before* the counter at the first and *after* it at the
//!   newest, so any delay between the two reads makes the measured scale larger, never
//!   smaller: the reading runs fast, not slow;
//! - the monotonic clock may be slewed (by NTP, at most 500 ppm) against the counter; over
//!   one anchor's age that is at most 0.5 us, and [`MARGIN_NS`] is added to every reading;
//! - counters of different processors are in step (within far less than the margin): the
//!   reading is used only where the kernel itself keeps time with the counter (its clock
//!   source is `tsc`), which it allows only for counters that are invariant and in step;
//! - a counter that reads below its anchor (another processor behind), an anchor older
//!   than [`ANCHOR_AGE_NS`], or an anchor being written: the monotonic clock itself.
//!
//! Each new anchor also checks the old one: had its reading now been behind the monotonic
//! clock, the counter is not trusted again in this process. A thread's readings never go
//! back, also from one anchor to the next: a floor that every reading is held to rises to
//! the old anchor's last reading before the new one is published.
//!
//! Elsewhere (another architecture or kernel clock source, under loom) the monotonic clock
//! is read every time.

/// Added to every reading: covers the slew of the monotonic clock over an anchor's age and
/// the skew of counters between processors.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux", not(loom))),
    allow(dead_code)
)]
pub(crate) const MARGIN_NS: u64 = 2_000;

/// The longest an anchor serves before a reading takes a new one.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux", not(loom))),
    allow(dead_code)
)]
pub(crate) const ANCHOR_AGE_NS: u64 = 1_000_000;

/// The monotonic time now or a little later (see the module doc), in nanoseconds.
#[inline]
pub(crate) fn monotonic_ns_at_least() -> u64 {
    imp::monotonic_ns_at_least()
}

/// Starts measuring the counter's scale, so that readings are cheap from
/// about 10 ms on (a runtime calls it when it starts).
pub(crate) fn start() {
    imp::monotonic_ns_at_least();
}

/// `CLOCK_MONOTONIC` in nanoseconds, read from the kernel.
pub(crate) fn monotonic_ns() -> u64 {
    imp::monotonic_ns()
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(loom)))]
mod imp {
    use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering::*};
    use std::sync::OnceLock;

    use super::{ANCHOR_AGE_NS, MARGIN_NS};

    /// A read of the counter between two of the clock this narrow is taken at once (see
    /// [`read_counter_and_clock`]); otherwise the narrowest of [`READ_TRIES`].
    const NARROW_READ_NS: u64 = 500;
    const READ_TRIES: usize = 4;
    /// Fraction bits of [`SCALE`].
    const SCALE_BITS: u32 = 32;
    /// How long the first anchor must lie back before the scale is measured from it.
    const FIRST_MEASURE_NS: u64 = 10_000_000;

    /// Nanoseconds per count in 32.32 fixed point; 0 until measured.
    static SCALE: AtomicU64 = AtomicU64::new(0);
    /// Counts an anchor serves for at the scale: [`ANCHOR_AGE_NS`], and never so many that
    /// counts times scale overflows (0 while the scale is unknown).
    static ANCHOR_COUNTS: AtomicU64 = AtomicU64::new(0);
    /// The anchor, a seqlock: odd while being written.
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    static ANCHOR_COUNT: AtomicU64 = AtomicU64::new(0);
    static ANCHOR_NS: AtomicU64 = AtomicU64::new(0);
    /// The first anchor, which every scale is measured from (0: none yet).
    static FIRST_COUNT: AtomicU64 = AtomicU64::new(0);
    static FIRST_NS: AtomicU64 = AtomicU64::new(0);
    /// No reading is below it: the highest reading a replaced anchor gave.
    static FLOOR: AtomicU64 = AtomicU64::new(0);
    /// Set once a check found a reading that would have been behind.
    static DISTRUSTED: AtomicBool = AtomicBool::new(false);

    #[inline]
    pub(super) fn monotonic_ns_at_least() -> u64 {
        match anchor().and_then(|(_, anchor)| anchor.reading_at(counter())) {
            // The floor was raised before this anchor was published.
            Some(reading) => reading.max(FLOOR.load(Relaxed)),
            None => reanchor(),
        }
    }

    /// An anchor with the scale and reach it is read with.
    #[derive(Clone, Copy)]
    struct Anchor {
        count: u64,
        ns: u64,
        scale: u64,
        /// How many counts past `count` it serves (0: none, the scale being unknown).
        reach: u64,
    }

    impl Anchor {
        /// The reading at the counter value `now`, when the anchor reaches it.
        #[inline]
        fn reading_at(&self, now: u64) -> Option<u64> {
            let counts = now.wrapping_sub(self.count);
            (counts < self.reach).then(|| self.reading(counts))
        }

        /// The reading `counts` after the anchor (fewer than its reach).
        #[inline]
        fn reading(&self, counts: u64) -> u64 {
            self.ns + ((counts * self.scale) >> SCALE_BITS) + MARGIN_NS
        }

        /// The highest reading it can have given by the counter value `now` (none for a
        /// counter behind it).
        fn highest_by(&self, now: u64) -> Option<u64> {
            let counts = now.checked_sub(self.count)?;
            Some(self.reading(counts.min(self.reach.saturating_sub(1))))
        }
    }

    /// Reads the monotonic clock, and takes it as the new anchor unless another thread is
    /// writing one or the counter reads behind the anchor (another processor's, a little
    /// behind). Every reading it returns is also at least the floor, and raises the
    /// floor to the highest reading the old anchor gave first, so that a thread's first
    /// reading from the new anchor is never behind its last from the old one (an anchor's
    /// readings run a little ahead of the monotonic clock towards its end: its scale errs
    /// large, its time was read just after its counter).
    #[cold]
    fn reanchor() -> u64 {
        let now = monotonic_ns();
        if !usable() || measuring(now) {
            return at_least_floor(now);
        }
        let (ns_before, count, ns) = read_counter_and_clock();
        let Some((sequence, old)) = anchor() else {
            return at_least_floor(ns);
        };
        if let Some(reading) = old.reading_at(count) {
            // Another thread took a new anchor meanwhile.
            return reading.max(FLOOR.load(Relaxed));
        }
        let Some(highest) = old.highest_by(count) else {
            return at_least_floor(ns.max(old.ns));
        };
        FLOOR.fetch_max(highest, AcqRel);
        if SEQUENCE
            .compare_exchange(sequence, sequence + 1, AcqRel, Relaxed)
            .is_err()
        {
            return at_least_floor(ns);
        }
        fence(Release);
        check_old_anchor(old, count, ns_before);
        ANCHOR_COUNT.store(count, Relaxed);
        ANCHOR_NS.store(ns, Relaxed);
        measure_scale(count, ns_before, ns);
        SEQUENCE.store(sequence + 2, Release);
        at_least_floor(ns)
    }

    /// The reading for the monotonic time `ns`: with the margin, and not below the floor.
    fn at_least_floor(ns: u64) -> u64 {
        (ns + MARGIN_NS).max(FLOOR.load(Acquire))
    }

    /// The counter between two readings of the monotonic clock, `(before, count, after)`,
    /// the narrowest of a few tries: the anchor's time is the reading after (never early
    /// for its count), and a thread interrupted between the two would have the anchor run
    /// ahead by the interruption.
    fn read_counter_and_clock() -> (u64, u64, u64) {
        let width = |&(before, _, after): &(u64, u64, u64)| after - before;
        let mut narrowest = (0, 0, u64::MAX);
        for _ in 0..READ_TRIES {
            let before = monotonic_ns();
            let count = counter();
            let read = (before, count, monotonic_ns());
            if width(&read) < width(&narrowest) {
                narrowest = read;
            }
            if width(&narrowest) <= NARROW_READ_NS {
                break;
            }
        }
        narrowest
    }

    /// Whether the first anchor is too recent to measure the scale from yet.
    fn measuring(now_ns: u64) -> bool {
        SCALE.load(Relaxed) == 0
            && FIRST_COUNT.load(Relaxed) != 0
            && now_ns.saturating_sub(FIRST_NS.load(Relaxed)) < FIRST_MEASURE_NS
    }

    /// The anchor with its sequence, unless it is being written.
    #[inline]
    fn anchor() -> Option<(u64, Anchor)> {
        let before = SEQUENCE.load(Acquire);
        let anchor = Anchor {
            count: ANCHOR_COUNT.load(Relaxed),
            ns: ANCHOR_NS.load(Relaxed),
            scale: SCALE.load(Relaxed),
            reach: ANCHOR_COUNTS.load(Relaxed),
        };
        fence(Acquire);
        (before % 2 == 0 && SEQUENCE.load(Relaxed) == before).then_some((before, anchor))
    }

    /// Distrusts the counter if the old anchor's reading at `count` would lie behind
    /// `ns_before`, the monotonic time read just before it. Called by the anchor's writer.
    fn check_old_anchor(old: Anchor, count: u64, ns_before: u64) {
        if old
            .reading_at(count)
            .is_some_and(|reading| reading < ns_before)
        {
            DISTRUSTED.store(true, Relaxed);
            SCALE.store(0, Relaxed);
            ANCHOR_COUNTS.store(0, Relaxed);
        }
    }

    /// Measures the scale from the first anchor to this one, once the first lies far
    /// enough back. The first anchor's time was read before its count, this one's after:
    /// the measured scale errs large (see the module doc). Called by the anchor's writer.
    fn measure_scale(count: u64, ns_before: u64, ns: u64) {
        if FIRST_COUNT.load(Relaxed) == 0 {
            // The first anchor: the time read before the counter.
            FIRST_NS.store(ns_before, Relaxed);
            FIRST_COUNT.store(count, Relaxed);
            return;
        }
        let (counts, elapsed) = (
            count.saturating_sub(FIRST_COUNT.load(Relaxed)),
            ns.saturating_sub(FIRST_NS.load(Relaxed)),
        );
        if DISTRUSTED.load(Relaxed) || elapsed < FIRST_MEASURE_NS || counts == 0 {
            return;
        }
        let scale = ((u128::from(elapsed) << SCALE_BITS) / u128::from(counts) + 1) as u64;
        let most_counts = u64::MAX / scale.max(1);
        let counts_per_age = (u128::from(ANCHOR_AGE_NS) << SCALE_BITS) / u128::from(scale);
        ANCHOR_COUNTS.store((counts_per_age as u64).min(most_counts), Relaxed);
        SCALE.store(scale, Relaxed);
    }

    /// Whether the counter may stand in for the monotonic clock in this process: the
    /// kernel keeps its time with it, and no check has found it behind.
    fn usable() -> bool {
        static KERNEL_USES_TSC: OnceLock<bool> = OnceLock::new();
        !DISTRUSTED.load(Relaxed)
            && *KERNEL_USES_TSC.get_or_init(|| {
                std::fs::read_to_string(
                    "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                )
                .is_ok_and(|source| source.trim() == "tsc")
            })
    }

    #[inline]
    fn counter() -> u64 {
        // SAFETY: RDTSC reads the time-stamp counter; it touches no memory, and every
        // x86_64 processor has it.
        unsafe { std::arch::x86_64::_rdtsc() }
    }

    pub(super) fn monotonic_ns() -> u64 {
        #[repr(C)]
        struct Timespec {
            seconds: i64,
            nanoseconds: i64,
        }
        extern "C" {
            fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
        }
        const CLOCK_MONOTONIC: i32 = 1;
        let mut time = Timespec {
            seconds: 0,
            nanoseconds: 0,
        };
        // SAFETY: clock_gettime writes one timespec, which `time` is, and keeps no pointer.
        unsafe { clock_gettime(CLOCK_MONOTONIC, &mut time) };
        time.seconds as u64 * 1_000_000_000 + time.nanoseconds as u64
    }

    /// For tests: what the counter's state is.
    #[cfg(test)]
    pub(super) mod warp {
        use std::sync::atomic::Ordering::SeqCst;

        /// Whether the counter is distrusted.
        pub(in super::super) fn distrusted() -> bool {
            super::DISTRUSTED.load(SeqCst)
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(loom))))]
mod imp {
    use std::time::Instant;

    pub(super) fn monotonic_ns_at_least() -> u64 {
        monotonic_ns()
    }

    /// Nanoseconds since the first reading in the process, on `Instant`'s monotonic clock.
    pub(super) fn monotonic_ns() -> u64 {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_reading_is_never_behind_the_monotonic_clock_and_mostly_just_ahead() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut ahead = Vec::new();
                    let start = monotonic_ns();
                    while monotonic_ns() - start < 200_000_000 {
                        let before = monotonic_ns();
                        let reading = monotonic_ns_at_least();
                        let after = monotonic_ns();
                        assert!(reading >= before, "{reading} is behind {before}");
                        ahead.push(reading.saturating_sub(after));
                    }
                    ahead.sort_unstable();
                    ahead[ahead.len() / 2]
                })
            })
            .collect();
        for thread in threads {
            let median_ahead = thread.join().unwrap();
            assert!(median_ahead <= 10 * MARGIN_NS, "ahead by {median_ahead} ns");
        }
    }

    /// One thread's readings never go back, also across the anchors taken every
    /// [`ANCHOR_AGE_NS`]: timers a thread adds already due keep the order it added them in.
    #[test]
    fn a_threads_readings_never_go_back() {
        let start = monotonic_ns();
        let mut last = monotonic_ns_at_least();
        let mut readings = 0u64;
        while monotonic_ns() - start < 200_000_000 {
            let reading = monotonic_ns_at_least();
            assert!(
                reading >= last,
                "{reading} after {last}, reading {readings}"
            );
            last = reading;
            readings += 1;
        }
    }

    /// Every thread's readings, while more threads than processors run (some busy, one
    /// sleeping across anchors), so that threads are preempted inside a renewal of the
    /// anchor: never behind the monotonic clock read just before, never back.
    #[test]
    fn under_load_no_threads_reading_goes_back_or_falls_behind() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let busy: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..6)
            .map(|thread| {
                std::thread::spawn(move || {
                    let start = monotonic_ns();
                    let mut last = 0;
                    let mut readings = 0u64;
                    while monotonic_ns() - start < 250_000_000 {
                        if thread == 0 && readings % 16 == 0 {
                            std::thread::sleep(std::time::Duration::from_micros(1_500));
                        }
                        let before = monotonic_ns();
                        let reading = monotonic_ns_at_least();
                        assert!(reading >= before, "{reading} is behind {before}");
                        assert!(reading >= last, "{reading} after {last}");
                        last = reading;
                        readings += 1;
                    }
                })
            })
            .collect();
        let results: Vec<_> = readers.into_iter().map(|reader| reader.join()).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in busy {
            thread.join().unwrap();
        }
        for result in results {
            result.unwrap();
        }
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        assert!(
            !imp::warp::distrusted(),
            "the check of old anchors distrusted a sound counter"
        );
    }
}
