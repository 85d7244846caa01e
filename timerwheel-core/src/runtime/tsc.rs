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
//! Each new anchor also checks the old one, carried on to the new counter value: had it
//! fallen behind the monotonic clock faster than the margin covers over an anchor's age (a
//! clock slewed faster than 2,000 ppm, as chrony can, or a counter that slowed), the
//! counter is not trusted again in this process. A counter gone back by an anchor's age or
//! more (as a suspend can reset it) serves again from the new anchor, at the same scale, if
//! the kernel still keeps its time with it; otherwise it is not trusted again either.
//!
//! A thread's readings never go back, also from one anchor to the next: a floor that every
//! reading is held to rises to the old anchor's last reading before the new one is
//! published.
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
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    imp::monotonic_ns()
}

/// In a fork() child: frees an anchor another thread of the parent was writing at the
/// fork (that thread is not in the child), or every reading would take the slow path.
pub(crate) fn after_fork_in_child() {
    imp::after_fork_in_child();
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
    /// Fraction bits of [`Shared::scale`].
    const SCALE_BITS: u32 = 32;
    /// How long the first anchor must lie back before the scale is measured from it.
    const FIRST_MEASURE_NS: u64 = 10_000_000;

    /// What every reading reads, in one static: its fields lie in one cache line, reached
    /// from one address (separate statics of a shared library each cost a load of their
    /// address first).
    #[repr(align(64))]
    struct Shared {
        /// Nanoseconds per count in 32.32 fixed point; 0 until measured.
        scale: AtomicU64,
        /// Counts an anchor serves for at the scale: [`ANCHOR_AGE_NS`], and never so many
        /// that counts times scale overflows (0 while the scale is unknown).
        anchor_counts: AtomicU64,
        /// The anchor, a seqlock: odd while being written.
        sequence: AtomicU64,
        anchor_count: AtomicU64,
        anchor_ns: AtomicU64,
        /// No reading is below it: the highest reading a replaced anchor gave.
        floor: AtomicU64,
    }

    static SHARED: Shared = Shared {
        scale: AtomicU64::new(0),
        anchor_counts: AtomicU64::new(0),
        sequence: AtomicU64::new(0),
        anchor_count: AtomicU64::new(0),
        anchor_ns: AtomicU64::new(0),
        floor: AtomicU64::new(0),
    };
    /// The first anchor, which every scale is measured from (0: none yet).
    static FIRST_COUNT: AtomicU64 = AtomicU64::new(0);
    static FIRST_NS: AtomicU64 = AtomicU64::new(0);
    /// Set once a check found a reading that would have been behind.
    static DISTRUSTED: AtomicBool = AtomicBool::new(false);

    #[inline]
    pub(super) fn monotonic_ns_at_least() -> u64 {
        match anchor().and_then(|(_, anchor)| anchor.reading_at(counter())) {
            // The floor was raised before this anchor was published.
            Some(reading) => not_below_floor(reading),
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

        /// The highest reading it gives, at the end of its reach.
        fn highest(&self) -> u64 {
            self.reading(self.reach.saturating_sub(1))
        }

        /// Whether the monotonic time `ns`, read just before the counter value `now` past
        /// the anchor, shows the counter falling behind the clock faster than the margin
        /// covers over an anchor's age: the anchor's reading carried on to `now` lies
        /// behind `ns` by more than the margin per age. (A slew within the doc's bound, or
        /// a little skew of counters, never does.)
        fn lags_at(&self, now: u64, ns: u64) -> bool {
            let counts = u128::from(now.wrapping_sub(self.count));
            let scaled = (counts * u128::from(self.scale)) >> SCALE_BITS;
            let allowed = (scaled * u128::from(MARGIN_NS) / u128::from(ANCHOR_AGE_NS))
                .max(u128::from(MARGIN_NS));
            self.reach != 0 && u128::from(self.ns) + scaled + allowed < u128::from(ns)
        }
    }

    /// Reads the monotonic clock, and takes it as the new anchor unless another thread is
    /// writing one or the counter reads a little behind the anchor (another processor's).
    /// Every reading it returns is also at least the floor, and it raises the floor to the
    /// highest reading the old anchor gave first, so that a thread's first reading from the
    /// new anchor is never behind its last from the old one (an anchor's readings run a
    /// little ahead of the monotonic clock towards its end: its scale errs large, its time
    /// was read just after its counter).
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
            return not_below_floor(reading);
        }
        // A counter behind the anchor is another processor's, a little behind; unless an
        // anchor's age has passed since by the clock: then it went back (as a suspend can
        // reset it), and is distrusted below.
        let went_back = count < old.count;
        if went_back && ns_before < old.ns + ANCHOR_AGE_NS {
            return at_least_floor(ns.max(old.ns));
        }
        // A counter gone back that far serves again from this anchor, at the same scale,
        // while the kernel still keeps its time with it (a suspend reset it; an invariant
        // counter keeps its rate); one that lags the clock does not (see the module doc).
        let not_again = match went_back {
            true => !kernel_keeps_time_with_the_counter(),
            false => old.lags_at(count, ns_before),
        };
        // The counter is past the old anchor's reach (or went back): it gave its highest.
        SHARED.floor.fetch_max(old.highest(), AcqRel);
        if SHARED
            .sequence
            .compare_exchange(sequence, sequence + 1, AcqRel, Relaxed)
            .is_err()
        {
            return at_least_floor(ns);
        }
        fence(Release);
        if not_again {
            distrust();
        }
        SHARED.anchor_count.store(count, Relaxed);
        SHARED.anchor_ns.store(ns, Relaxed);
        measure_scale(count, ns_before, ns);
        SHARED.sequence.store(sequence + 2, Release);
        at_least_floor(ns)
    }

    /// The reading for the monotonic time `ns`: with the margin, and not below the floor.
    fn at_least_floor(ns: u64) -> u64 {
        not_below_floor(ns + MARGIN_NS)
    }

    /// `reading`, raised to the floor if below it: every reading passes here.
    #[inline]
    fn not_below_floor(reading: u64) -> u64 {
        reading.max(SHARED.floor.load(Acquire))
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
        SHARED.scale.load(Relaxed) == 0
            && FIRST_COUNT.load(Relaxed) != 0
            && now_ns.saturating_sub(FIRST_NS.load(Relaxed)) < FIRST_MEASURE_NS
    }

    /// The anchor with its sequence, unless it is being written.
    #[inline]
    fn anchor() -> Option<(u64, Anchor)> {
        let before = SHARED.sequence.load(Acquire);
        let anchor = Anchor {
            count: SHARED.anchor_count.load(Relaxed),
            ns: SHARED.anchor_ns.load(Relaxed),
            scale: SHARED.scale.load(Relaxed),
            reach: SHARED.anchor_counts.load(Relaxed),
        };
        fence(Acquire);
        (before % 2 == 0 && SHARED.sequence.load(Relaxed) == before).then_some((before, anchor))
    }

    /// Stops reading the counter in this process: the anchor being written serves no
    /// counts. Called by the anchor's writer, after raising the floor (which a reader that
    /// sees the distrust then sees too).
    fn distrust() {
        DISTRUSTED.store(true, Release);
        SHARED.scale.store(0, Relaxed);
        SHARED.anchor_counts.store(0, Relaxed);
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
        SHARED
            .anchor_counts
            .store((counts_per_age as u64).min(most_counts), Relaxed);
        SHARED.scale.store(scale, Relaxed);
    }

    /// Whether the counter may stand in for the monotonic clock in this process: the
    /// kernel keeps its time with it, and no check has found it behind.
    fn usable() -> bool {
        static KERNEL_USES_TSC: OnceLock<bool> = OnceLock::new();
        !DISTRUSTED.load(Acquire)
            && *KERNEL_USES_TSC.get_or_init(kernel_keeps_time_with_the_counter)
    }

    /// Whether the kernel's clock source is the counter now: it is only for counters that
    /// are invariant and in step on every processor, and it leaves them when they are not.
    fn kernel_keeps_time_with_the_counter() -> bool {
        #[cfg(test)]
        if warp::kernel_left() {
            return false;
        }
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|source| source.trim() == "tsc")
    }

    #[inline]
    fn counter() -> u64 {
        // SAFETY: RDTSC reads the time-stamp counter; it touches no memory, and every
        // x86_64 processor has it.
        let count = unsafe { std::arch::x86_64::_rdtsc() };
        #[cfg(test)]
        let count = warp::apply(count);
        count
    }

    #[inline]
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

    /// See [`super::after_fork_in_child`]. The half-written anchor serves no counts: the
    /// next reading renews it.
    pub(super) fn after_fork_in_child() {
        let sequence = SHARED.sequence.load(Relaxed);
        if sequence % 2 == 1 {
            SHARED.anchor_counts.store(0, Relaxed);
            SHARED.sequence.store(sequence + 1, Release);
        }
    }

    /// For tests, run in a process of their own: makes the counter run slower than the
    /// monotonic clock, or jump back, from some moment on.
    #[cfg(test)]
    pub(super) mod warp {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

        /// The counter value the warp starts at (0: none).
        static FROM: AtomicU64 = AtomicU64::new(0);
        /// The counter's speed from then on, in 1/1024ths.
        static RATE: AtomicU64 = AtomicU64::new(1024);
        /// How many counts it jumps back then.
        static BACK: AtomicU64 = AtomicU64::new(0);

        pub(in super::super) fn apply(count: u64) -> u64 {
            let from = FROM.load(SeqCst);
            if from == 0 || count < from {
                return count;
            }
            from + (count - from) * RATE.load(SeqCst) / 1024 - BACK.load(SeqCst)
        }

        /// Set when a test has the kernel leave the counter as its clock source.
        static KERNEL_LEFT: AtomicBool = AtomicBool::new(false);

        /// From now on the kernel's clock source is another than the counter.
        pub(in super::super) fn leave_the_counter_in_the_kernel() {
            KERNEL_LEFT.store(true, SeqCst);
        }

        pub(in super::super) fn kernel_left() -> bool {
            KERNEL_LEFT.load(SeqCst)
        }

        /// Whether the counter is distrusted.
        pub(in super::super) fn distrusted() -> bool {
            super::DISTRUSTED.load(SeqCst)
        }

        /// Whether the scale has been measured.
        pub(in super::super) fn scale_measured() -> bool {
            super::SHARED.scale.load(SeqCst) != 0
        }

        /// Leaves the anchor as a writer does while it writes (as if forked then).
        pub(in super::super) fn start_writing_the_anchor() {
            super::SHARED.sequence.fetch_add(1, SeqCst);
        }

        /// Whether an anchor serves readings: none is being written, and it has a reach.
        pub(in super::super) fn anchor_serves() -> bool {
            super::SHARED.sequence.load(SeqCst) % 2 == 0
                && super::SHARED.anchor_counts.load(SeqCst) != 0
        }

        /// From now on the counter runs at `rate`/1024 of its speed, after jumping back by
        /// `back_ns` (at the measured scale).
        pub(in super::super) fn start(rate: u64, back_ns: u64) {
            let scale = super::SHARED.scale.load(SeqCst);
            RATE.store(rate, SeqCst);
            BACK.store(
                ((u128::from(back_ns) << super::SCALE_BITS) / u128::from(scale)) as u64,
                SeqCst,
            );
            // SAFETY: as in `counter`.
            FROM.store(unsafe { std::arch::x86_64::_rdtsc() }, SeqCst);
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

    pub(super) fn after_fork_in_child() {}
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

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    mod warped {
        use super::super::imp::warp;
        use super::super::{monotonic_ns, monotonic_ns_at_least};

        /// Runs the test `name` in a process of its own (the clock's state is the
        /// process's), which runs `scenario`.
        fn in_own_process(name: &str, scenario: fn()) {
            const VARIABLE: &str = "TIMERWHEEL_TSC_SCENARIO";
            if std::env::var(VARIABLE).as_deref() == Ok(name) {
                return scenario();
            }
            let module = module_path!().split_once("::").unwrap().1;
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([&format!("{module}::{name}"), "--exact", "--test-threads=1"])
                .env(VARIABLE, name)
                .status()
                .unwrap();
            assert!(status.success(), "{name} failed in its own process");
        }

        /// Reads for `ns`, each reading checked against the last, and against the
        /// monotonic clock read just before it (all, or only once the counter is
        /// distrusted): the number behind and the most behind.
        fn read_for(ns: u64, only_once_distrusted: bool) -> (u64, u64) {
            let start = monotonic_ns();
            let (mut behind, mut most_behind, mut last) = (0, 0, 0);
            loop {
                let checked = !only_once_distrusted || warp::distrusted();
                let before = monotonic_ns();
                if before - start >= ns {
                    return (behind, most_behind);
                }
                let reading = monotonic_ns_at_least();
                assert!(reading >= last, "{reading} after {last}");
                last = reading;
                if checked && reading < before {
                    behind += 1;
                    most_behind = most_behind.max(before - reading);
                }
            }
        }

        fn measure_scale() {
            while !warp::scale_measured() {
                monotonic_ns_at_least();
            }
        }

        /// The counter runs slower than the monotonic clock from some moment on (as when
        /// the clock is slewed faster than the margin covers): a new anchor finds the old
        /// one behind, and from then on no reading is (the anchors in use until then lag).
        #[test]
        fn a_counter_slower_than_the_clock_is_found_and_distrusted() {
            in_own_process(
                "a_counter_slower_than_the_clock_is_found_and_distrusted",
                || {
                    measure_scale();
                    warp::start(900, 0);
                    let (behind, most_behind) = read_for(20_000_000, true);
                    assert!(warp::distrusted(), "the counter is still trusted");
                    assert_eq!(behind, 0, "behind by up to {most_behind} ns");
                },
            );
        }

        /// A fork() child whose parent was writing the anchor at the fork (the writer is
        /// not in the child): the runtime's fork handler frees it, and the child's next
        /// reading takes a new anchor, which serves the ones after it (without the handler,
        /// every reading took the slow path for good).
        #[test]
        fn a_fork_child_renews_an_anchor_the_parent_was_writing() {
            in_own_process(
                "a_fork_child_renews_an_anchor_the_parent_was_writing",
                || {
                    let config = crate::Config {
                        manual: true,
                        ..crate::Config::default()
                    };
                    // A runtime installs the fork handlers.
                    let _runtime = crate::Runtime::<crate::BoxTask>::new(config).unwrap();
                    measure_scale();
                    warp::start_writing_the_anchor();
                    // SAFETY: the child only reads clocks and atomics, then leaves with _exit.
                    let child = unsafe { libc::fork() };
                    if child == 0 {
                        let before = monotonic_ns();
                        let sound = monotonic_ns_at_least() >= before;
                        let before = monotonic_ns();
                        let sound = sound && monotonic_ns_at_least() >= before;
                        // SAFETY: leaves the child without running the parent's exit handlers.
                        unsafe { libc::_exit(if sound && warp::anchor_serves() { 0 } else { 1 }) }
                    }
                    let mut status = 0;
                    // SAFETY: waits for the child just forked, writing its status to `status`.
                    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
                    assert_eq!(
                        status, 0,
                        "the child's readings found no anchor serving them"
                    );
                },
            );
        }

        /// The counter jumps back 20 ms (as a suspend can reset it); then 30 ms of
        /// readings, none behind the clock (nor going back).
        fn jump_back_and_read() {
            warp::start(1024, 20_000_000);
            let (behind, most_behind) = read_for(30_000_000, false);
            assert_eq!(behind, 0, "behind by up to {most_behind} ns");
        }

        /// The counter jumps back (as after a suspend that resets it) while the kernel keeps
        /// its time with it: no reading is behind, also once the counter has come back up
        /// to the old anchor's, and readings come from the counter again (before, the
        /// process read the clock for good).
        #[test]
        fn a_counter_that_jumps_back_serves_again_from_a_new_anchor() {
            in_own_process(
                "a_counter_that_jumps_back_serves_again_from_a_new_anchor",
                || {
                    measure_scale();
                    jump_back_and_read();
                    assert!(!warp::distrusted());
                    monotonic_ns_at_least();
                    assert!(warp::anchor_serves(), "the counter serves no reading");
                },
            );
        }

        /// As above, but the kernel has left the counter (its processors' counters went
        /// out of step): the counter is not read again.
        #[test]
        fn a_counter_that_jumps_back_is_distrusted_once_the_kernel_left_it() {
            in_own_process(
                "a_counter_that_jumps_back_is_distrusted_once_the_kernel_left_it",
                || {
                    measure_scale();
                    warp::leave_the_counter_in_the_kernel();
                    jump_back_and_read();
                    assert!(warp::distrusted());
                },
            );
        }
    }
}
