//! W1 and W2 of docs/benchmarks.md on the bare wheel against a bare `BinaryHeap` timer with lazy
//! deletion, same seeded random numbers, one tick = 1 ms, payload `u64` for both.
//!
//! Each implementation runs each workload in a child process of its own (this program
//! started again with `--child IMPL WORKLOAD N`), so that the memory measured for one is
//! not memory the other freed. Each pair runs three times, alternating; the median run of
//! each (by W1's total_ns, W2's touch_ns) is printed as one JSON line, then a table of
//! ratios ours / baseline.
//!
//!     cargo run --release -p timerwheel-core --example bench_wheel [-- --quick]
//!
//! `--quick` runs once with N = 100,000 (and a tenth of W2's touches) for a smoke run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use timerwheel_core::wheel::{Key, Wheel};

const SEED: u64 = 0x7135_2026_0001;
/// W1 delays: [1 s, 3600 s) at 1 ms a tick.
const W1_DELAYS: (u64, u64) = (1_000, 3_600_000);
/// W2: every timer at 30 s from now.
const W2_DELAY: u64 = 30_000;
/// W2: the clock moves one tick every this many touches.
const TOUCHES_PER_TICK: u64 = 1_000;
/// W2 touches per live timer (5,000,000 for 1,000,000).
const TOUCHES_PER_TIMER: u64 = 5;
const PAYLOAD_BYTES: f64 = 8.0;

/// splitmix64: small, fast, and the same sequence for every implementation.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)`.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// What the workloads need of a timer structure; handles are plain `u64`s for both.
trait Timers {
    const NAME: &'static str;
    const BASELINE: bool;
    fn new() -> Self;
    fn add(&mut self, deadline: u64, value: u64) -> u64;
    fn cancel(&mut self, handle: u64) -> bool;
    /// Moves a pending timer to `deadline`; returns its handle from now on.
    fn touch(&mut self, handle: u64, deadline: u64) -> u64;
    /// Moves the clock to `now`, firing what is due; returns how many fired.
    fn advance(&mut self, now: u64) -> usize;
}

impl Timers for Wheel<u64> {
    const NAME: &'static str = "timerwheel-wheel";
    const BASELINE: bool = false;

    fn new() -> Self {
        Wheel::new()
    }

    fn add(&mut self, deadline: u64, value: u64) -> u64 {
        self.insert(deadline, value).expect("no limit").to_u64()
    }

    fn cancel(&mut self, handle: u64) -> bool {
        self.remove(key(handle)).is_some()
    }

    fn touch(&mut self, handle: u64, deadline: u64) -> u64 {
        assert!(self.reset(key(handle), deadline));
        handle
    }

    fn advance(&mut self, now: u64) -> usize {
        Wheel::advance(self, now, |_, value| {
            black_box(value);
        })
    }
}

fn key(handle: u64) -> Key {
    Key::from_u64(handle).expect("a handle from add")
}

/// The baseline: a min-heap of `(deadline, slot, generation)` and a slot table. Cancel
/// bumps the slot's generation; the heap entry stays and is skipped when it reaches the
/// head.
struct HeapTimers {
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
}

struct Slot {
    generation: u32,
    value: u64,
}

impl HeapTimers {
    /// The slot of a live handle.
    fn live_slot(&self, handle: u64) -> Option<usize> {
        let (slot, generation) = (handle as u32, (handle >> 32) as u32);
        let live = self.slots.get(slot as usize)?.generation == generation;
        live.then_some(slot as usize)
    }

    fn retire(&mut self, slot: usize) -> u64 {
        self.slots[slot].generation += 1;
        self.free.push(slot as u32);
        self.slots[slot].value
    }

    fn push(&mut self, deadline: u64, slot: u32) -> u64 {
        let generation = self.slots[slot as usize].generation;
        self.heap.push(Reverse((deadline, slot, generation)));
        (u64::from(generation) << 32) | u64::from(slot)
    }
}

impl Timers for HeapTimers {
    const NAME: &'static str = "binaryheap-lazy";
    const BASELINE: bool = true;

    fn new() -> Self {
        HeapTimers {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    fn add(&mut self, deadline: u64, value: u64) -> u64 {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot {
                generation: 0,
                value: 0,
            });
            (self.slots.len() - 1) as u32
        });
        self.slots[slot as usize].value = value;
        self.push(deadline, slot)
    }

    fn cancel(&mut self, handle: u64) -> bool {
        self.live_slot(handle)
            .map(|slot| self.retire(slot))
            .is_some()
    }

    fn touch(&mut self, handle: u64, deadline: u64) -> u64 {
        let slot = self.live_slot(handle).expect("a live handle");
        self.slots[slot].generation += 1;
        self.push(deadline, slot as u32)
    }

    fn advance(&mut self, now: u64) -> usize {
        let mut fired = 0;
        while let Some(&Reverse((deadline, slot, generation))) = self.heap.peek() {
            if deadline > now {
                break;
            }
            self.heap.pop();
            if self.slots[slot as usize].generation == generation {
                black_box(self.retire(slot as usize));
                fired += 1;
            }
        }
        fired
    }
}

/// Resident memory of this process, from the second field of /proc/self/statm.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * page_size()
}

/// The page size, from the kernel's own accounting of this process.
fn page_size() -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    smaps
        .lines()
        .find_map(|l| l.strip_prefix("KernelPageSize:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(4096, |kb| kb * 1024)
}

fn ns_per(start: Instant, n: u64) -> f64 {
    start.elapsed().as_nanos() as f64 / n as f64
}

/// A random permutation of `0..n`.
fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    order
}

/// W1: add N timers at random delays, cancel them all in random order, advance past the
/// last deadline.
fn w1<T: Timers>(n: u64) -> String {
    let mut rng = Rng(SEED);
    let (low, high) = W1_DELAYS;
    let deadlines: Vec<u64> = (0..n).map(|_| low + rng.below(high - low)).collect();
    let order = shuffled(n as usize, &mut rng);
    // Written now, so that the handles' pages are resident before the measurement.
    let mut handles = vec![u64::MAX; n as usize];
    let mut timers = T::new();
    let rss = rss_bytes();

    let start = Instant::now();
    for (i, &deadline) in deadlines.iter().enumerate() {
        handles[i] = timers.add(deadline, i as u64);
    }
    let add_ns = ns_per(start, n);
    let bytes_per_timer = (rss_bytes().saturating_sub(rss)) as f64 / n as f64;
    let cancel_start = Instant::now();
    for &i in &order {
        assert!(timers.cancel(handles[i]));
    }
    let cancel_ns = ns_per(cancel_start, n);
    assert_eq!(timers.advance(high), 0, "a cancelled timer fired");
    let total_ns = ns_per(start, n);
    format!(
        r#"{{"impl":"{}","baseline":{},"workload":"W1","n":{n},"add_ns":{add_ns:.1},"cancel_ns":{cancel_ns:.1},"total_ns":{total_ns:.1},"bytes_per_timer":{bytes_per_timer:.1}}}"#,
        T::NAME,
        T::BASELINE
    )
}

/// W2: N live timers at 30 s; touches of a random one to "30 s from now", the clock
/// moving one tick every thousand touches.
fn w2<T: Timers>(n: u64) -> String {
    let mut rng = Rng(SEED);
    let touches = n * TOUCHES_PER_TIMER;
    let picks: Vec<u32> = (0..touches).map(|_| rng.below(n) as u32).collect();
    let mut timers = T::new();
    let mut handles: Vec<u64> = (0..n).map(|i| timers.add(W2_DELAY, i)).collect();

    let start = Instant::now();
    let mut now = 0;
    for (i, &pick) in picks.iter().enumerate() {
        if i as u64 % TOUCHES_PER_TICK == TOUCHES_PER_TICK - 1 {
            now += 1;
            assert_eq!(timers.advance(now), 0, "a touched timer fired");
        }
        let handle = &mut handles[pick as usize];
        *handle = timers.touch(*handle, now + W2_DELAY);
    }
    let touch_ns = ns_per(start, touches);
    format!(
        r#"{{"impl":"{}","baseline":{},"workload":"W2","n":{n},"touches":{touches},"touch_ns":{touch_ns:.1}}}"#,
        T::NAME,
        T::BASELINE
    )
}

fn run_child(implementation: &str, workload: &str, n: u64) -> String {
    match (implementation, workload) {
        ("wheel", "W1") => w1::<Wheel<u64>>(n),
        ("heap", "W1") => w1::<HeapTimers>(n),
        ("wheel", "W2") => w2::<Wheel<u64>>(n),
        ("heap", "W2") => w2::<HeapTimers>(n),
        other => panic!("unknown run {other:?}"),
    }
}

/// Runs one implementation on one workload in a fresh process; returns its JSON line.
fn spawn(implementation: &str, workload: &str, n: u64) -> String {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .args(["--child", implementation, workload, &n.to_string()])
        .output()
        .expect("start the child");
    assert!(
        out.status.success(),
        "{implementation} {workload} failed: {out:?}"
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

/// Runs `workload` `runs` times on both implementations, alternating so that both see the
/// same noise; prints and returns the median run of each by `metric`.
fn compare(workload: &str, metric: &str, n: u64, runs: usize) -> (String, String) {
    let mut wheel = Vec::new();
    let mut heap = Vec::new();
    for _ in 0..runs {
        wheel.push(spawn("wheel", workload, n));
        heap.push(spawn("heap", workload, n));
    }
    let median = |mut lines: Vec<String>| {
        lines.sort_by(|a, b| field(a, metric).total_cmp(&field(b, metric)));
        let line = lines.swap_remove(lines.len() / 2);
        println!("{line}");
        line
    };
    (median(wheel), median(heap))
}

/// A number field of one of our JSON lines.
fn field(json: &str, name: &str) -> f64 {
    let rest = &json[json.find(&format!("\"{name}\":")).expect(name) + name.len() + 3..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].parse().expect("a number")
}

fn row(workload: &str, metric: &str, ours: &str, base: &str, target: &str) {
    let (a, b) = (field(ours, metric), field(base, metric));
    println!(
        "{workload:<4} {metric:<16} {a:>10.1} {b:>10.1} {:>7.2}x   {target}",
        a / b
    );
}

fn table(w1: (&str, &str), w2: (&str, &str)) {
    println!();
    println!(
        "{:<4} {:<16} {:>10} {:>10} {:>8}   target",
        "", "", "wheel", "heap", "ratio"
    );
    row("W1", "add_ns", w1.0, w1.1, "<= 1.0x");
    row("W1", "cancel_ns", w1.0, w1.1, "");
    row("W1", "total_ns", w1.0, w1.1, "<= 0.5x");
    row("W1", "bytes_per_timer", w1.0, w1.1, "");
    let overhead = field(w1.0, "bytes_per_timer") - PAYLOAD_BYTES;
    println!(
        "W1   wheel core overhead: {overhead:.1} B per timer (payload excluded), target <= 48 B"
    );
    row("W2", "touch_ns", w2.0, w2.1, "<= 0.15x");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let n = args[3].parse().expect("N");
        println!("{}", run_child(&args[1], &args[2], n));
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (n, runs) = if quick { (100_000, 1) } else { (1_000_000, 3) };
    let w1 = compare("W1", "total_ns", n, runs);
    let w2 = compare("W2", "touch_ns", n, runs);
    table((&w1.0, &w1.1), (&w2.0, &w2.1));
}
