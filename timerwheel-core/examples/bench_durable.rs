//! Durable timers (docs/durable.md) on the SQLite store, each beside its baseline in the
//! same run, one JSON line per result:
//! - D1: async durable adds per second from 4 threads, committed (flush), against the same
//!   adds in memory (`add_at`, no store);
//! - D2: sync add latency from 4 threads (group commit), p50/p99, against in-memory adds;
//! - D3: fires acknowledged per second, the application acknowledging 100 tokens per call,
//!   until every ack is durable (flush), in async mode (the store's default) and in sync mode
//!   from 4 acking threads (concurrent calls share commits), against the same timers firing
//!   in memory;
//! - D4: restore of the store's timers (open: read, schedule), against adding as many
//!   timers in memory.
//!
//! Durability off adds nothing to the runtime (the layer is not in its paths), so W1 of
//! bench_runtime is its measure. `--quick` shrinks the sizes; `--only D4` runs one row.

mod support;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{Lateness, Row};
use timerwheel_core::durable::{Ack, Durable, DurableBuilder, DurableTimer, Mode, Token};
use timerwheel_core::Runtime;

const THREADS: u64 = 4;
const OURS: &str = "timerwheel-sqlite";
const MEMORY: &str = "timerwheel-memory";

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn far() -> SystemTime {
    start() + Duration::from_secs(3600)
}

fn store(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tw-bench-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{tag}.db"));
    for side in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{side}", path.display()));
    }
    path
}

fn wheel() -> Arc<Runtime> {
    Arc::new(Runtime::builder().virtual_clock(start()).build().unwrap())
}

fn builder(ack: Ack) -> DurableBuilder {
    Durable::builder().handler("charge", move |_| ack)
}

fn timer(key: u64, first: SystemTime) -> DurableTimer<'static> {
    DurableTimer {
        key,
        name: "charge",
        payload: b"cents=5",
        first,
        period: None,
        replace: false,
    }
}

/// Runs `per_thread(thread)` on THREADS threads at once; the time until all are done.
fn on_threads(per_thread: impl Fn(u64) + Send + Sync + 'static) -> Duration {
    let per_thread = Arc::new(per_thread);
    let began = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let f = Arc::clone(&per_thread);
            thread::spawn(move || f(t))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    began.elapsed()
}

fn d1_async_changes(n: u64) {
    let durable = Arc::new(builder(Ack::Now).open_sqlite(wheel(), store("d1")).unwrap());
    let per = n / THREADS;
    let d = Arc::clone(&durable);
    let elapsed = on_threads(move |t| {
        for i in 0..per {
            d.add(&timer(t * per + i, far())).unwrap();
        }
        d.flush().unwrap();
    });
    let ours = n as f64 / elapsed.as_secs_f64();
    Row::new(OURS, false, "D1", n as usize)
        .with("changes_per_s", ours)
        .emit();
    let memory = wheel();
    let m = Arc::clone(&memory);
    let elapsed = on_threads(move |_| {
        for _ in 0..per {
            m.add_at(far(), Box::new(|_| {})).unwrap();
        }
    });
    let base = n as f64 / elapsed.as_secs_f64();
    Row::new(MEMORY, true, "D1", n as usize)
        .with("changes_per_s", base)
        .emit();
    println!(
        "D1 async durable changes/s (target >= 100000): {ours:.0} ({:.2}x of in memory)",
        ours / base
    );
}

fn d2_sync_latency(n: u64) {
    let durable = Arc::new(
        builder(Ack::Now)
            .mode(Mode::Sync { batch: 1000 })
            .open_sqlite(wheel(), store("d2"))
            .unwrap(),
    );
    let lateness = Arc::new(Lateness::default());
    let per = n / THREADS;
    let (d, l) = (Arc::clone(&durable), Arc::clone(&lateness));
    on_threads(move |t| {
        for i in 0..per {
            let began = Instant::now();
            d.add(&timer(t * per + i, far())).unwrap();
            l.record(began, Instant::now());
        }
    });
    let p99 = lateness.percentile(99);
    Row::new(OURS, false, "D2", n as usize)
        .with("add_p50_us", lateness.percentile(50) as f64)
        .with("add_p99_us", p99 as f64)
        .emit();
    let memory = wheel();
    let base = Arc::new(Lateness::default());
    let (m, l) = (Arc::clone(&memory), Arc::clone(&base));
    on_threads(move |_| {
        for _ in 0..per {
            let began = Instant::now();
            m.add_at(far(), Box::new(|_| {})).unwrap();
            l.record(began, Instant::now());
        }
    });
    Row::new(MEMORY, true, "D2", n as usize)
        .with("add_p50_us", base.percentile(50) as f64)
        .with("add_p99_us", base.percentile(99) as f64)
        .emit();
    println!("D2 sync durable add p99 (target <= 10000 us): {p99} us");
}

fn d3_acked_fires(n: u64) {
    let base = memory_fires(n);
    Row::new(MEMORY, true, "D3", n as usize)
        .with("acked_fires_per_s", base)
        .emit();
    let async_mode = acked_fires(n, Mode::default(), 1);
    Row::new(OURS, false, "D3", n as usize)
        .with("acked_fires_per_s", async_mode)
        .emit();
    let sync_mode = acked_fires(n, Mode::Sync { batch: 1000 }, THREADS);
    Row::new(OURS, false, "D3-sync", n as usize)
        .with("acked_fires_per_s", sync_mode)
        .emit();
    println!(
        "D3 fires acknowledged/s, 100 tokens per ack call (target >= 50000): async {async_mode:.0} \
         ({:.4}x of in memory, {base:.0}); sync, {THREADS} ackers: {sync_mode:.0} ({:.4}x)",
        async_mode / base,
        sync_mode / base
    );
}

/// Fires acknowledged per second: `n` stored timers fall due at once on reopen in `mode`;
/// `ackers` threads acknowledge their tokens, 100 per call, until all are durable.
fn acked_fires(n: u64, mode: Mode, ackers: u64) -> f64 {
    let path = store("d3");
    {
        let durable = builder(Ack::Later).open_sqlite(wheel(), &path).unwrap();
        for key in 0..n {
            durable
                .add(&timer(key, start() + Duration::from_millis(10)))
                .unwrap();
        }
        durable.flush().unwrap();
    }
    let tokens: Arc<Mutex<Vec<Token>>> = Arc::default();
    let seen = Arc::clone(&tokens);
    let wheel = wheel();
    let durable = Durable::builder()
        .handler("charge", move |fired| {
            seen.lock().unwrap().push(fired.token.clone());
            Ack::Later
        })
        .mode(mode)
        .open_sqlite(Arc::clone(&wheel), &path)
        .unwrap();
    let durable = Arc::new(durable);
    let began = Instant::now();
    wheel.advance(Duration::from_millis(10)).unwrap();
    let fired = Arc::new(std::mem::take(&mut *tokens.lock().unwrap()));
    assert_eq!(fired.len() as u64, n);
    let share = fired.len().div_ceil(ackers as usize);
    let ackers: Vec<_> = (0..ackers as usize)
        .map(|a| {
            let (durable, fired) = (Arc::clone(&durable), Arc::clone(&fired));
            thread::spawn(move || {
                let mine = &fired[(a * share).min(fired.len())..((a + 1) * share).min(fired.len())];
                for chunk in mine.chunks(100) {
                    assert_eq!(durable.ack(chunk).unwrap(), chunk.len());
                }
            })
        })
        .collect();
    ackers.into_iter().for_each(|a| a.join().unwrap());
    durable.flush().unwrap();
    let per_s = n as f64 / began.elapsed().as_secs_f64();
    assert_eq!(durable.stats().unwrap().unacked_fires, 0);
    per_s
}

/// Fires per second of `n` in-memory timers falling due at once.
fn memory_fires(n: u64) -> f64 {
    let memory = wheel();
    for _ in 0..n {
        memory
            .add_at(start() + Duration::from_millis(10), Box::new(|_| {}))
            .unwrap();
    }
    let began = Instant::now();
    memory.advance(Duration::from_millis(10)).unwrap();
    n as f64 / began.elapsed().as_secs_f64()
}

fn d4_restore(n: u64) {
    let path = store("d4");
    {
        let durable = builder(Ack::Now)
            .mode(Mode::Async {
                batch: 10_000,
                delay: Duration::from_millis(50),
            })
            .open_sqlite(wheel(), &path)
            .unwrap();
        for key in 0..n {
            durable.add(&timer(key, far())).unwrap();
        }
        durable.flush().unwrap();
    }
    // The runtime is built before the clock starts, as for the baseline: building it
    // after the setup's store closed pays for returning that store's memory to the heap.
    let restored = wheel();
    let began = Instant::now();
    let durable = builder(Ack::Now).open_sqlite(restored, &path).unwrap();
    let restore = began.elapsed();
    assert_eq!(durable.stats().unwrap().timers, n);
    Row::new(OURS, false, "D4", n as usize)
        .with("restore_ms", restore.as_secs_f64() * 1e3)
        .emit();
    let memory = wheel();
    let began = Instant::now();
    for _ in 0..n {
        memory.add_at(far(), Box::new(|_| {})).unwrap();
    }
    let base = began.elapsed();
    Row::new(MEMORY, true, "D4", n as usize)
        .with("restore_ms", base.as_secs_f64() * 1e3)
        .emit();
    println!(
        "D4 restore of {n} timers (target <= 2000 ms): {:.0} ms ({:.1}x adding them in memory)",
        restore.as_secs_f64() * 1e3,
        restore.as_secs_f64() / base.as_secs_f64()
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    // `--only D3` runs one row.
    let args: Vec<String> = std::env::args().collect();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    let runs = |row: &str| only.is_none_or(|o| o == row);
    if runs("D1") {
        d1_async_changes(400_000 / scale);
    }
    if runs("D2") {
        d2_sync_latency(4_000 / scale);
    }
    if runs("D3") {
        d3_acked_fires(100_000 / scale);
    }
    if runs("D4") {
        d4_restore(1_000_000 / scale);
    }
    let _ = std::fs::remove_dir_all(store("none").parent().unwrap());
}
