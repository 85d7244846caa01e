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
//! clock, the counter is not trusted again in this process.
//!
//! Elsewhere (another architecture or kernel clock source, under loom) the monotonic clock
//! is read every time.

/// Added to every reading: covers the slew of the monotonic clock over an anchor's age and
/// the skew of counters between processors.
pub(crate) const MARGIN_NS: u64 = 2_000;

/// The longest an anchor serves before a reading takes a new one.
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

    /// Fraction bits of [`SCALE`].
    const SCALE_BITS: u32 = 32;
    /// How long the first anchor must lie back before the scale is measured from it.
    const FIRST_MEASURE_NS: u64 = 10_000_000;

    /// Nanoseconds per count in 32.32 fixed point; 0 until measured.
    static SCALE: AtomicU64 = AtomicU64::new(0);
    /// Counts an anchor serves for at the scale: [`ANCHOR_AGE_NS`], and never so many that
    /// counts times scale overflows.
    static ANCHOR_COUNTS: AtomicU64 = AtomicU64::new(0);
    /// The anchor, a seqlock: odd while being written.
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    static ANCHOR_COUNT: AtomicU64 = AtomicU64::new(0);
    static ANCHOR_NS: AtomicU64 = AtomicU64::new(0);
    /// The first anchor, which every scale is measured from (0: none yet).
    static FIRST_COUNT: AtomicU64 = AtomicU64::new(0);
    static FIRST_NS: AtomicU64 = AtomicU64::new(0);
    /// Set once a check found a reading that would have been behind.
    static DISTRUSTED: AtomicBool = AtomicBool::new(false);

    #[inline]
    pub(super) fn monotonic_ns_at_least() -> u64 {
        let scale = SCALE.load(Relaxed);
        if scale != 0 {
            if let Some((count, ns)) = anchor() {
                let counts = counter().wrapping_sub(count);
                if counts < ANCHOR_COUNTS.load(Relaxed) {
                    return reading(ns, counts, scale);
                }
            }
        }
        reanchor()
    }

    /// Reads the monotonic clock, and takes it as the new anchor unless another thread is
    /// writing one. The counter is read first: a new anchor's time is never early for it.
    #[cold]
    fn reanchor() -> u64 {
        let ns_before = monotonic_ns();
        if !usable() || measuring(ns_before) {
            return ns_before;
        }
        let count = counter();
        let ns = monotonic_ns();
        let sequence = SEQUENCE.load(Relaxed);
        let writing = sequence % 2 == 1
            || SEQUENCE
                .compare_exchange(sequence, sequence + 1, Acquire, Relaxed)
                .is_err();
        if writing {
            return ns;
        }
        fence(Release);
        check_old_anchor(count, ns_before);
        ANCHOR_COUNT.store(count, Relaxed);
        ANCHOR_NS.store(ns, Relaxed);
        measure_scale(count, ns);
        SEQUENCE.store(sequence + 2, Release);
        ns
    }

    /// The reading `counts` after an anchor taken at `anchor_ns`.
    #[inline]
    fn reading(anchor_ns: u64, counts: u64, scale: u64) -> u64 {
        anchor_ns + ((counts * scale) >> SCALE_BITS) + MARGIN_NS
    }

    /// Whether the first anchor is too recent to measure the scale from yet.
    fn measuring(now_ns: u64) -> bool {
        SCALE.load(Relaxed) == 0
            && FIRST_COUNT.load(Relaxed) != 0
            && now_ns.saturating_sub(FIRST_NS.load(Relaxed)) < FIRST_MEASURE_NS
    }

    /// The anchor, unless it is being written.
    #[inline]
    fn anchor() -> Option<(u64, u64)> {
        let before = SEQUENCE.load(Acquire);
        let count = ANCHOR_COUNT.load(Relaxed);
        let ns = ANCHOR_NS.load(Relaxed);
        fence(Acquire);
        (before % 2 == 0 && SEQUENCE.load(Relaxed) == before).then_some((count, ns))
    }

    /// Distrusts the counter if the old anchor's reading at `count` would lie behind
    /// `ns_before`, the monotonic time read just before it. Called by the anchor's writer.
    fn check_old_anchor(count: u64, ns_before: u64) {
        let scale = SCALE.load(Relaxed);
        let (old_count, old_ns) = (ANCHOR_COUNT.load(Relaxed), ANCHOR_NS.load(Relaxed));
        let counts = count.wrapping_sub(old_count);
        let in_reach = scale != 0 && counts < ANCHOR_COUNTS.load(Relaxed);
        if in_reach && reading(old_ns, counts, scale) < ns_before {
            DISTRUSTED.store(true, Relaxed);
            SCALE.store(0, Relaxed);
        }
    }

    /// Measures the scale from the first anchor to this one, once the first lies far
    /// enough back. The first anchor's time was read before its count, this one's after:
    /// the measured scale errs large (see the module doc). Called by the anchor's writer.
    fn measure_scale(count: u64, ns: u64) {
        if FIRST_COUNT.load(Relaxed) == 0 {
            // The first anchor: the time first, then the counter.
            FIRST_NS.store(monotonic_ns(), Relaxed);
            FIRST_COUNT.store(counter(), Relaxed);
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
}
