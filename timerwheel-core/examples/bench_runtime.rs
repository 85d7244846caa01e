//! W1-W8 of docs/benchmarks.md through the runtime (Rust API), each beside its baselines in the
//! same run: the same-shape heap timer (BinaryHeap + lazy delete behind a Mutex, with its
//! own thread) and tokio's DelayQueue (W1 and W2 also against tokio's `Sleep`). Every (workload, implementation) pair runs in a
//! child process of its own, so memory figures start from a clean heap. W3 runs three times
//! per implementation and reports the run with the median p99.
//!
//! W6-W8 measure the executor (slow callbacks, bursts, a mixed load). They run here, on the
//! Rust API, because W6 already does and the executor is the core's: the C ABI adds nothing
//! to a callback that blocks for milliseconds. W7 and W8 keep their sizes under `--quick`
//! (the cases of the issue, a few seconds each).
//!
//! W9 measures throughput: the highest rate of timers due a millisecond after they are added
//! that keeps p99 lateness under 5 ms, beside tokio's multi-threaded runtime.
//!
//!     cargo run --release --example bench_runtime [-- --quick] [-- --only W6,W7,W8]

mod support;

use std::future::{poll_fn, Future};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use support::heap_timer::HeapTimer;
use support::{cpu_time, per_item, print_table, rss_bytes, Lateness, Ratio, Rng, Row};
use timerwheel_core::{BoxTask, Config, Runtime};

const SEED: u64 = 0x7157_2024;
const OURS: &str = "timerwheel-rust";
const HEAP: &str = "heap-timer";
const TOKIO: &str = "tokio-delayqueue";
/// tokio's own timer future, each registered with the runtime's driver by a first poll.
const TOKIO_SLEEP: &str = "tokio-sleep";
const TOKIO_MT: &str = "tokio-multi-thread";

struct Scale {
    quick: bool,
    n: usize,
    touches: usize,
    idle: Duration,
    slow: usize,
}

fn scale(quick: bool) -> Scale {
    match quick {
        false => Scale {
            quick,
            n: 1_000_000,
            touches: 5_000_000,
            idle: Duration::from_secs(5),
            slow: 2_000,
        },
        true => Scale {
            quick,
            n: 100_000,
            touches: 500_000,
            idle: Duration::from_secs(1),
            slow: 200,
        },
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        let row = run_child(&args[pos + 1], &args[pos + 2], &scale(quick));
        row.emit();
        return;
    }
    let only = args
        .iter()
        .position(|a| a == "--only")
        .map(|p| args[p + 1].clone());
    let mut plan = vec![
        ("W1", OURS),
        ("W1", HEAP),
        ("W1", TOKIO),
        ("W1", TOKIO_SLEEP),
        ("W2", OURS),
        ("W2", HEAP),
        ("W2", TOKIO),
        ("W2", TOKIO_SLEEP),
        ("W3", OURS),
        ("W3", HEAP),
        ("W3", TOKIO),
        ("W4", OURS),
        ("W4", HEAP),
        ("W4", TOKIO),
        ("W5", OURS),
        ("W5", HEAP),
        ("W6", "timerwheel-adaptive"),
        ("W6", "timerwheel-fixed1"),
    ];
    plan.extend(BURSTS.iter().map(|burst| ("W7", burst.name)));
    plan.extend([("W8", W8_MIXED), ("W8", W8_INSTANT_ONLY)]);
    plan.extend([("W9", OURS), ("W9", TOKIO_MT)]);
    let mut rows = Vec::new();
    for (workload, implementation) in plan {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|w| w == workload))
        {
            continue;
        }
        let row = match workload {
            "W3" => median_w3(implementation, quick),
            _ => spawn_child(workload, implementation, quick, None),
        };
        row.emit();
        rows.push(row);
    }
    report(&rows);
}

/// Runs one workload in a child process; `bench_dir` replaces `TW_BENCH_DIR` for it.
fn spawn_child(workload: &str, implementation: &str, quick: bool, bench_dir: Option<&Path>) -> Row {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--child", workload, implementation]);
    if quick {
        command.arg("--quick");
    }
    if let Some(dir) = bench_dir {
        command.env("TW_BENCH_DIR", dir);
    }
    let output = command.output().expect("child bench");
    let line = String::from_utf8_lossy(&output.stdout);
    let line = line.lines().last().unwrap_or_default();
    parse_row(line).unwrap_or_else(|| panic!("{workload} {implementation} failed: {line}"))
}

/// W3 runs per implementation. The lateness tail of a shared machine swings from run to
/// run, so the run with the median p99 is the one reported, with its histogram.
const W3_RUNS: usize = 3;

fn median_w3(implementation: &str, quick: bool) -> Row {
    let bench_dir = std::env::var_os("TW_BENCH_DIR").map(PathBuf::from);
    let run_dir = |run: usize| bench_dir.as_ref().map(|d| d.join(format!("w3-run{run}")));
    let mut runs: Vec<(f64, usize, Row)> = (0..W3_RUNS)
        .map(|run| {
            if let Some(dir) = run_dir(run) {
                std::fs::create_dir_all(dir).expect("run directory");
            }
            let row = spawn_child("W3", implementation, quick, run_dir(run).as_deref());
            (row.get("late_p99_us").unwrap_or(f64::MAX), run, row)
        })
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (_, median, row) = runs.swap_remove(W3_RUNS / 2);
    if let (Some(dir), Some(median_dir)) = (&bench_dir, run_dir(median)) {
        for file in std::fs::read_dir(median_dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = std::fs::copy(file.path(), dir.join(file.file_name()));
        }
    }
    for dir in (0..W3_RUNS).filter_map(run_dir) {
        let _ = std::fs::remove_dir_all(dir);
    }
    row
}

/// Reads back a line that `Row::emit` printed.
fn parse_row(line: &str) -> Option<Row> {
    let body = line.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut fields = body.split(", ").filter_map(|kv| kv.split_once(": "));
    let text = |v: &str| v.trim_matches('"').to_string();
    let implementation = text(fields.next()?.1);
    let baseline = fields.next()?.1 == "true";
    let workload = text(fields.next()?.1);
    let n = fields.next()?.1.parse().ok()?;
    let mut row = Row::new(leak(implementation), baseline, leak(workload), n);
    for (k, v) in fields {
        row = row.with(leak(text(k)), v.parse().ok()?);
    }
    Some(row)
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn run_child(workload: &str, implementation: &str, scale: &Scale) -> Row {
    match (workload, implementation) {
        ("W1", OURS) => w1_ours(scale.n),
        ("W1", HEAP) => w1_heap(scale.n),
        ("W1", TOKIO) => w1_tokio(scale.n),
        ("W1", TOKIO_SLEEP) => w1_tokio_sleep(scale.n),
        ("W2", OURS) => w2_ours(scale),
        ("W2", HEAP) => w2_heap(scale),
        ("W2", TOKIO) => w2_tokio(scale),
        ("W2", TOKIO_SLEEP) => w2_tokio_sleep(scale),
        ("W3", OURS) => w3_ours(scale.n),
        ("W3", HEAP) => w3_heap(scale.n),
        ("W3", TOKIO) => w3_tokio(scale.n),
        ("W4", OURS) => w4_ours(scale),
        ("W4", HEAP) => w4_heap(scale),
        ("W4", TOKIO) => w4_tokio(scale),
        ("W5", OURS) => w5_ours(scale.n),
        ("W5", HEAP) => w5_heap(scale.n),
        ("W6", "timerwheel-adaptive") => w6(scale.slow, 16, "timerwheel-adaptive"),
        ("W6", "timerwheel-fixed1") => w6(scale.slow, 1, "timerwheel-fixed1"),
        ("W7", name) => w7(burst_named(name)),
        ("W8", W8_MIXED) => w8(W8_SLOW, W8_MIXED),
        ("W8", W8_INSTANT_ONLY) => w8(0, W8_INSTANT_ONLY),
        ("W9", OURS) => w9_ours(scale.quick),
        ("W9", TOKIO_MT) => w9_tokio(scale.quick),
        _ => panic!("unknown {workload} {implementation}"),
    }
}

fn w1_delays(n: usize) -> Vec<Duration> {
    let mut rng = Rng::new(SEED);
    (0..n)
        .map(|_| Duration::from_millis(rng.range(1_000, 3_600_000)))
        .collect()
}

fn w1_order(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    Rng::new(SEED ^ 1).shuffle(&mut order);
    order
}

fn runtime(max_workers: usize) -> Runtime<BoxTask> {
    let config = Config {
        max_workers,
        ..Config::default()
    };
    Runtime::new(config).unwrap()
}

/// A callback that captures a word, as real ones do, so that boxing it allocates.
fn task(tag: usize) -> BoxTask {
    Box::new(move |_| {
        black_box(tag);
    })
}

/// The same callback for the heap baseline.
fn heap_task(tag: usize) -> support::heap_timer::Callback {
    Box::new(move || {
        black_box(tag);
    })
}

fn w1_row(
    name: &'static str,
    baseline: bool,
    n: usize,
    add: Duration,
    cancel: Duration,
    rss: u64,
) -> Row {
    Row::new(name, baseline, "W1", n)
        .with("add_ns", per_item(add, n))
        .with("cancel_ns", per_item(cancel, n))
        .with("bytes_per_timer", rss as f64 / n as f64)
}

fn w1_ours(n: usize) -> Row {
    let (delays, order) = (w1_delays(n), w1_order(n));
    let rt = runtime(2);
    let mut ids = vec![None; n]; // the bench's own array: resident before the reading
    let rss = rss_bytes();
    let start = Instant::now();
    for (i, &d) in delays.iter().enumerate() {
        ids[i] = rt.add(d, task(i)).ok();
    }
    let add = start.elapsed();
    let grown = rss_bytes() - rss;
    let start = Instant::now();
    for &i in &order {
        let _ = rt.cancel(ids[i].unwrap()); // under a profiler the first ones may have fired
    }
    w1_row(OURS, false, n, add, start.elapsed(), grown)
}

fn w1_heap(n: usize) -> Row {
    let (delays, order) = (w1_delays(n), w1_order(n));
    let timer = HeapTimer::new();
    let mut ids = vec![None; n];
    let rss = rss_bytes();
    let start = Instant::now();
    for (i, &d) in delays.iter().enumerate() {
        ids[i] = Some(timer.add(d, heap_task(i)));
    }
    let add = start.elapsed();
    let grown = rss_bytes() - rss;
    let start = Instant::now();
    for &i in &order {
        assert!(timer.cancel(ids[i].unwrap()));
    }
    w1_row(HEAP, true, n, add, start.elapsed(), grown)
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn w1_tokio(n: usize) -> Row {
    let (delays, order) = (w1_delays(n), w1_order(n));
    let rt = tokio_runtime();
    let _guard = rt.enter();
    let mut queue = tokio_util::time::DelayQueue::new();
    let mut keys = vec![None; n];
    let rss = rss_bytes();
    let start = Instant::now();
    for (i, &d) in delays.iter().enumerate() {
        keys[i] = Some(queue.insert(task(i), d));
    }
    let add = start.elapsed();
    let grown = rss_bytes() - rss;
    let start = Instant::now();
    for &i in &order {
        queue.remove(&keys[i].unwrap());
    }
    w1_row(TOKIO, true, n, add, start.elapsed(), grown)
}

/// A `Sleep` of tokio's due `delay` from now, registered with the driver of the runtime
/// entered (as awaiting it would, by its first poll).
fn registered_sleep(delay: Duration) -> std::pin::Pin<Box<tokio::time::Sleep>> {
    let mut sleep = Box::pin(tokio::time::sleep(delay));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(sleep.as_mut().poll(&mut cx).is_pending());
    sleep
}

/// W1 on tokio's `Sleep`: an add is a sleep made and polled once, a delete its drop.
fn w1_tokio_sleep(n: usize) -> Row {
    let (delays, order) = (w1_delays(n), w1_order(n));
    let rt = tokio_runtime();
    let _guard = rt.enter();
    let mut sleeps: Vec<_> = (0..n).map(|_| None).collect();
    let rss = rss_bytes();
    let start = Instant::now();
    for (i, &d) in delays.iter().enumerate() {
        sleeps[i] = Some(registered_sleep(d));
    }
    let add = start.elapsed();
    let grown = rss_bytes() - rss;
    let start = Instant::now();
    for &i in &order {
        sleeps[i] = None;
    }
    w1_row(TOKIO_SLEEP, true, n, add, start.elapsed(), grown)
}

/// W2: `touches` refreshes of a random live 30 s timer to "30 s from now".
fn w2_targets(scale: &Scale) -> Vec<usize> {
    let mut rng = Rng::new(SEED ^ 2);
    (0..scale.touches)
        .map(|_| rng.range(0, scale.n as u64) as usize)
        .collect()
}

const SESSION: Duration = Duration::from_secs(30);

fn w2_row(name: &'static str, baseline: bool, scale: &Scale, elapsed: Duration) -> Row {
    Row::new(name, baseline, "W2", scale.n).with("touch_ns", per_item(elapsed, scale.touches))
}

fn w2_ours(scale: &Scale) -> Row {
    let targets = w2_targets(scale);
    let rt = runtime(2);
    let ids: Vec<_> = (0..scale.n)
        .map(|i| rt.add(SESSION, task(i)).ok().unwrap())
        .collect();
    let start = Instant::now();
    for &i in &targets {
        rt.reset(ids[i], SESSION).unwrap();
    }
    w2_row(OURS, false, scale, start.elapsed())
}

fn w2_heap(scale: &Scale) -> Row {
    let targets = w2_targets(scale);
    let timer = HeapTimer::new();
    let mut ids: Vec<_> = (0..scale.n)
        .map(|i| timer.add(SESSION, heap_task(i)))
        .collect();
    let start = Instant::now();
    for &i in &targets {
        timer.cancel(ids[i]);
        ids[i] = timer.add(SESSION, heap_task(i));
    }
    w2_row(HEAP, true, scale, start.elapsed())
}

fn w2_tokio(scale: &Scale) -> Row {
    let targets = w2_targets(scale);
    let rt = tokio_runtime();
    let _guard = rt.enter();
    let mut queue = tokio_util::time::DelayQueue::new();
    let keys: Vec<_> = (0..scale.n)
        .map(|i| queue.insert(task(i), SESSION))
        .collect();
    let start = Instant::now();
    for &i in &targets {
        queue.reset(&keys[i], SESSION);
    }
    w2_row(TOKIO, true, scale, start.elapsed())
}

/// W2 on tokio's `Sleep`: a touch is `Sleep::reset` to 30 s from now.
fn w2_tokio_sleep(scale: &Scale) -> Row {
    let targets = w2_targets(scale);
    let rt = tokio_runtime();
    let _guard = rt.enter();
    let mut sleeps: Vec<_> = (0..scale.n).map(|_| registered_sleep(SESSION)).collect();
    let start = Instant::now();
    for &i in &targets {
        let deadline = tokio::time::Instant::now() + SESSION;
        sleeps[i].as_mut().reset(deadline);
    }
    w2_row(TOKIO_SLEEP, true, scale, start.elapsed())
}

/// W3: n timers due uniformly over [1 s, 3 s); each records how late it ran.
fn w3_delays(n: usize) -> Vec<Duration> {
    let mut rng = Rng::new(SEED ^ 3);
    (0..n)
        .map(|_| Duration::from_micros(rng.range(1_000_000, 3_000_000)))
        .collect()
}

fn w3_row(
    name: &'static str,
    baseline: bool,
    n: usize,
    lateness: &Lateness,
    total: Duration,
) -> Row {
    lateness.dump(&format!("w3-{name}"));
    Row::new(name, baseline, "W3", n)
        .with("fired", lateness.count() as f64)
        .with("total_s", total.as_secs_f64())
        .with("late_p50_us", lateness.percentile(50) as f64)
        .with("late_p99_us", lateness.percentile(99) as f64)
        .with("late_max_us", lateness.max() as f64)
}

fn wait_for_count(lateness: &Lateness, n: usize) {
    let give_up = Instant::now() + Duration::from_secs(120);
    while lateness.count() < n as u64 && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(10));
    }
}

fn w3_ours(n: usize) -> Row {
    let delays = w3_delays(n);
    let lateness = Arc::new(Lateness::default());
    let rt = runtime(2);
    let start = Instant::now();
    for &delay in &delays {
        let (lateness, deadline) = (Arc::clone(&lateness), Instant::now() + delay);
        rt.add(
            delay,
            Box::new(move |_| lateness.record(deadline, Instant::now())),
        )
        .ok()
        .unwrap();
    }
    wait_for_count(&lateness, n);
    w3_row(OURS, false, n, &lateness, start.elapsed())
}

fn w3_heap(n: usize) -> Row {
    let delays = w3_delays(n);
    let lateness = Arc::new(Lateness::default());
    let timer = HeapTimer::new();
    let start = Instant::now();
    for &delay in &delays {
        let (lateness, deadline) = (Arc::clone(&lateness), Instant::now() + delay);
        timer.add(
            delay,
            Box::new(move || lateness.record(deadline, Instant::now())),
        );
    }
    wait_for_count(&lateness, n);
    w3_row(HEAP, true, n, &lateness, start.elapsed())
}

fn w3_tokio(n: usize) -> Row {
    let delays = w3_delays(n);
    let lateness = Lateness::default();
    let rt = tokio_runtime();
    let start = Instant::now();
    rt.block_on(async {
        let mut queue = tokio_util::time::DelayQueue::with_capacity(n);
        for &delay in &delays {
            queue.insert(Instant::now() + delay, delay);
        }
        while let Some(expired) = poll_fn(|cx| queue.poll_expired(cx)).await {
            lateness.record(expired.into_inner(), Instant::now());
        }
    });
    w3_row(TOKIO, true, n, &lateness, start.elapsed())
}

/// W4: 100,000 timers an hour away, then `idle` of waiting; process CPU during the wait.
fn w4_row(name: &'static str, baseline: bool, scale: &Scale, cpu: Duration) -> Row {
    let pct = 100.0 * cpu.as_secs_f64() / scale.idle.as_secs_f64();
    Row::new(name, baseline, "W4", 100_000).with("idle_cpu_pct", pct)
}

const HOUR: Duration = Duration::from_secs(3600);

fn measure_idle(idle: Duration) -> Duration {
    thread::sleep(Duration::from_millis(200));
    let before = cpu_time();
    thread::sleep(idle);
    cpu_time() - before
}

fn w4_ours(scale: &Scale) -> Row {
    let rt = runtime(2);
    for i in 0..100_000 {
        rt.add(HOUR, task(i)).ok().unwrap();
    }
    w4_row(OURS, false, scale, measure_idle(scale.idle))
}

fn w4_heap(scale: &Scale) -> Row {
    let timer = HeapTimer::new();
    for i in 0..100_000usize {
        timer.add(HOUR, heap_task(i));
    }
    w4_row(HEAP, true, scale, measure_idle(scale.idle))
}

fn w4_tokio(scale: &Scale) -> Row {
    let idle = scale.idle;
    let waiter = thread::spawn(move || {
        tokio_runtime().block_on(async {
            let mut queue = tokio_util::time::DelayQueue::new();
            for i in 0..100_000usize {
                queue.insert(i, HOUR);
            }
            let wait = poll_fn(|cx| queue.poll_expired(cx));
            let _ = tokio::time::timeout(idle + Duration::from_millis(400), wait).await;
        })
    });
    let cpu = measure_idle(scale.idle);
    waiter.join().unwrap();
    w4_row(TOKIO, true, scale, cpu)
}

/// W5: two threads each add n/2 timers, then delete their own, at once.
fn w5_row(name: &'static str, baseline: bool, n: usize, add: Duration, cancel: Duration) -> Row {
    Row::new(name, baseline, "W5", n)
        .with("mt_add_ns", per_item(add, n))
        .with("mt_cancel_ns", per_item(cancel, n))
}

/// Runs `add` then `cancel` on two threads at once; the wall time of each phase.
fn two_threads<I: Send>(
    n: usize,
    add: impl Fn(usize) -> I + Sync,
    cancel: impl Fn(I) + Sync,
) -> (Duration, Duration) {
    let barrier = Barrier::new(3);
    thread::scope(|s| {
        for t in 0..2 {
            let (barrier, add, cancel) = (&barrier, &add, &cancel);
            s.spawn(move || {
                barrier.wait();
                let ids: Vec<I> = (0..n / 2).map(|i| add(t * n + i)).collect();
                barrier.wait();
                barrier.wait();
                ids.into_iter().for_each(cancel);
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        let add = start.elapsed();
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        (add, start.elapsed())
    })
}

fn w5_ours(n: usize) -> Row {
    let delays = w1_delays(n);
    let rt = runtime(2);
    let (add, cancel) = two_threads(
        n,
        |i| rt.add(delays[i % n], task(i)).ok().unwrap(),
        |id| rt.cancel(id).unwrap(),
    );
    w5_row(OURS, false, n, add, cancel)
}

fn w5_heap(n: usize) -> Row {
    let delays = w1_delays(n);
    let timer = HeapTimer::new();
    let (add, cancel) = two_threads(
        n,
        |i| timer.add(delays[i % n], heap_task(i)),
        |id| {
            timer.cancel(id);
        },
    );
    w5_row(HEAP, true, n, add, cancel)
}

/// W6: `count` timers due within 100 ms whose callbacks block 20 ms; then 3 s idle.
fn w6(count: usize, max_workers: usize, name: &'static str) -> Row {
    let config = Config {
        min_workers: 1,
        max_workers,
        worker_keepalive: Duration::from_secs(1),
        ..Config::default()
    };
    let rt: Runtime<BoxTask> = Runtime::new(config).unwrap();
    let lateness = Arc::new(Lateness::default());
    let mut rng = Rng::new(SEED ^ 6);
    let start = Instant::now();
    for _ in 0..count {
        let delay = Duration::from_micros(rng.range(0, 100_000));
        let (lateness, deadline) = (Arc::clone(&lateness), Instant::now() + delay);
        let slow_call = move |_| {
            lateness.record(deadline, Instant::now());
            thread::sleep(Duration::from_millis(20));
        };
        rt.add(delay, Box::new(slow_call)).ok().unwrap();
    }
    while rt.stats().fired < count as u64 || rt.stats().queue_depth > 0 {
        thread::sleep(Duration::from_millis(5));
    }
    while rt.stats().pending > 0 {
        thread::sleep(Duration::from_millis(5));
    }
    let drained = start.elapsed();
    thread::sleep(Duration::from_millis(300));
    thread::sleep(Duration::from_secs(3));
    let stats = rt.stats();
    Row::new(name, max_workers == 1, "W6", count)
        .with("drain_s", drained.as_secs_f64())
        .with("late_p99_us", lateness.percentile(99) as f64)
        .with("workers_peak", stats.workers_peak as f64)
        .with("workers_after_idle", stats.workers as f64)
}

/// Adds a one-shot due at `due` (the delay is taken from the clock now).
fn add_due(rt: &Runtime<BoxTask>, due: Instant, task: BoxTask) {
    let delay = due.saturating_duration_since(Instant::now());
    rt.add(delay, task).ok().unwrap();
}

/// A W7 case: `n` one-shots due in the same tick, each blocking `block_ms`, on a pool of
/// 1 to `max_workers` workers.
struct Burst {
    name: &'static str,
    n: usize,
    block_ms: u64,
    max_workers: usize,
}

const BURSTS: [Burst; 3] = [
    Burst {
        name: "timerwheel-64x50ms-max16",
        n: 64,
        block_ms: 50,
        max_workers: 16,
    },
    Burst {
        name: "timerwheel-256x20ms-max16",
        n: 256,
        block_ms: 20,
        max_workers: 16,
    },
    Burst {
        name: "timerwheel-33x100ms-max4",
        n: 33,
        block_ms: 100,
        max_workers: 4,
    },
];

/// W7 and W8 add their timers this long before the first is due.
const LEAD: Duration = Duration::from_millis(100);

fn burst_named(name: &str) -> &'static Burst {
    BURSTS
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("unknown W7 case {name}"))
}

/// W7: the drain time (the common due time to the last return) against the ideal, one
/// tick + n * block / max_workers. Each run records its end as a "lateness" against the
/// due time, so the largest one is the drain.
fn w7(burst: &Burst) -> Row {
    let rt = runtime(burst.max_workers);
    let block = Duration::from_millis(burst.block_ms);
    let ideal = rt.config().tick + block * burst.n as u32 / burst.max_workers as u32;
    let ends = Arc::new(Lateness::default());
    let due = Instant::now() + LEAD;
    for _ in 0..burst.n {
        let ends = Arc::clone(&ends);
        let blocking_call = move |_| {
            thread::sleep(block);
            ends.record(due, Instant::now());
        };
        add_due(&rt, due, Box::new(blocking_call));
    }
    wait_for_count(&ends, burst.n);
    let drain = Duration::from_micros(ends.max());
    Row::new(burst.name, false, "W7", burst.n)
        .with("drain_s", drain.as_secs_f64())
        .with("ideal_s", ideal.as_secs_f64())
        .with("ratio", drain.as_secs_f64() / ideal.as_secs_f64())
        .with("workers_peak", rt.stats().workers_peak as f64)
}

/// W8's instant callbacks, due uniformly over [`W8_SPAN`].
const W8_INSTANT: usize = 20_000;
/// W8's slow callbacks, each blocking [`W8_BLOCK`], spread evenly over the same span.
const W8_SLOW: usize = 40;
const W8_SPAN: Duration = Duration::from_secs(2);
const W8_BLOCK: Duration = Duration::from_millis(200);
/// Instant and slow callbacks together on a pool of 1 to 16 workers.
const W8_MIXED: &str = "timerwheel-mixed";
/// The same instant callbacks without the slow ones: what the tick alone costs them.
const W8_INSTANT_ONLY: &str = "timerwheel-instant-only";

/// W8 with `slow` blocking callbacks: the lateness of the instant ones, which each record
/// against its exact due time.
fn w8(slow: usize, name: &'static str) -> Row {
    let rt = runtime(16);
    let lateness = Arc::new(Lateness::default());
    let mut rng = Rng::new(SEED ^ 8);
    let start = Instant::now() + LEAD;
    for _ in 0..W8_INSTANT {
        let due = start + Duration::from_micros(rng.range(0, W8_SPAN.as_micros() as u64));
        let lateness = Arc::clone(&lateness);
        add_due(
            &rt,
            due,
            Box::new(move |_| lateness.record(due, Instant::now())),
        );
    }
    for i in 0..slow {
        let due = start + W8_SPAN * (2 * i + 1) as u32 / (2 * slow) as u32;
        add_due(&rt, due, Box::new(|_| thread::sleep(W8_BLOCK)));
    }
    wait_for_count(&lateness, W8_INSTANT);
    Row::new(name, slow == 0, "W8", W8_INSTANT)
        .with("late_p50_us", lateness.percentile(50) as f64)
        .with("late_p99_us", lateness.percentile(99) as f64)
        .with("late_max_us", lateness.max() as f64)
        .with("workers_peak", rt.stats().workers_peak as f64)
}

/// W9 through the runtime with its default configuration (as many workers as CPUs).
fn w9_ours(quick: bool) -> Row {
    let rt = Runtime::new(Config::default()).unwrap();
    support::w9::run(OURS, false, quick, |due, lateness| {
        let record = move |_| lateness.record(due, Instant::now());
        add_due(&rt, due, Box::new(record));
    })
}

/// W9 through tokio's multi-threaded runtime (a worker per CPU): a task per timer that
/// sleeps until its time, spawned from the producer thread as an add from outside.
fn w9_tokio(quick: bool) -> Row {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .unwrap();
    support::w9::run(TOKIO_MT, true, quick, |due, lateness| {
        rt.spawn(async move {
            tokio::time::sleep_until(due.into()).await;
            lateness.record(due, Instant::now());
        });
    })
}

/// W7 rows as drain / ideal, in ms, for the table.
fn burst_ratios(rows: &[Row]) -> impl Iterator<Item = Ratio> + '_ {
    rows.iter().filter(|r| r.workload == "W7").filter_map(|r| {
        Some(Ratio {
            what: format!("W7 drain / ideal (ms): {}", r.implementation),
            ours: r.get("drain_s")? * 1e3,
            baseline: r.get("ideal_s")? * 1e3,
            target: Some(1.3),
        })
    })
}

fn report(rows: &[Row]) {
    let ratio = |w, f, ours, base| Ratio::of(rows, w, f, ours, base);
    let ratios: Vec<Ratio> = [
        ratio("W1", "add_ns", OURS, HEAP).map(|r| r.target(0.6)),
        ratio("W1", "cancel_ns", OURS, HEAP).map(|r| r.target(1.0)),
        ratio("W1", "add_ns", OURS, TOKIO),
        ratio("W1", "cancel_ns", OURS, TOKIO),
        ratio("W1", "add_ns", OURS, TOKIO_SLEEP),
        ratio("W1", "cancel_ns", OURS, TOKIO_SLEEP),
        ratio("W1", "bytes_per_timer", OURS, HEAP),
        ratio("W2", "touch_ns", OURS, HEAP),
        ratio("W2", "touch_ns", OURS, TOKIO),
        ratio("W2", "touch_ns", OURS, TOKIO_SLEEP),
        ratio("W3", "late_p99_us", OURS, HEAP),
        ratio("W3", "late_p99_us", OURS, TOKIO),
        ratio("W4", "idle_cpu_pct", OURS, HEAP),
        ratio("W4", "idle_cpu_pct", OURS, TOKIO),
        ratio("W5", "mt_add_ns", OURS, HEAP),
        ratio("W6", "drain_s", "timerwheel-adaptive", "timerwheel-fixed1").map(|r| r.target(0.25)),
    ]
    .into_iter()
    .flatten()
    .chain(burst_ratios(rows))
    .chain(
        [
            ratio("W8", "late_p99_us", W8_MIXED, W8_INSTANT_ONLY),
            ratio("W8", "late_max_us", W8_MIXED, W8_INSTANT_ONLY),
            ratio("W9", "max_rate", OURS, TOKIO_MT),
        ]
        .into_iter()
        .flatten(),
    )
    .collect();
    print_table(
        "Runtime (Rust API) against its baselines, same run",
        &ratios,
    );
    let single = rows
        .iter()
        .find(|r| r.workload == "W1" && r.implementation == OURS);
    let multi = rows
        .iter()
        .find(|r| r.workload == "W5" && r.implementation == OURS);
    if let (Some(single), Some(multi)) = (single, multi) {
        let (s, m) = (
            single.get("add_ns").unwrap(),
            multi.get("mt_add_ns").unwrap(),
        );
        println!(
            "W5 mt_add_ns / W1 add_ns (target <= 1.0): {m:.1} / {s:.1} = {:.2}x",
            m / s
        );
    }
    if let Some(w3) = rows
        .iter()
        .find(|r| r.workload == "W3" && r.implementation == OURS)
    {
        println!(
            "W3 fired {} of {}; late p99 {} us (target <= 1500)",
            w3.get("fired").unwrap(),
            w3.n,
            w3.get("late_p99_us").unwrap()
        );
    }
    if let Some(w4) = rows
        .iter()
        .find(|r| r.workload == "W4" && r.implementation == OURS)
    {
        println!(
            "W4 idle CPU {:.4} % (target <= 0.01)",
            w4.get("idle_cpu_pct").unwrap()
        );
    }
    if let Some(w8) = rows
        .iter()
        .find(|r| r.workload == "W8" && r.implementation == W8_MIXED)
    {
        println!(
            "W8 instant callbacks beside {W8_SLOW} slow ones: late p50 {} us, p99 {} us \
             (target <= 2000), max {} us (target <= 20000)",
            w8.get("late_p50_us").unwrap(),
            w8.get("late_p99_us").unwrap(),
            w8.get("late_max_us").unwrap()
        );
    }
}
