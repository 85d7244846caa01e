//! `make bench-fleet-memory`: a node's memory against the number of timers in the store.
//! A private PostgreSQL is filled in stages to 100 thousand, 1 million and 10 million
//! timers, spread over 30 days (`--quick`: a tenth of each); at each stage, a `fleet-node`
//! process takes every shard, loads its window (60 s) and fires a sample of timers due
//! within it, and its peak resident memory (`VmHWM`) is read. A node's memory follows its
//! window, not the store: the ratio of each stage's peak to the first one's stays near 1.
//! One JSON object per line, then a table.

mod support;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{connect, now_ms, spawn_node};
use timerwheel_fleet::server::TestServer;
use timerwheel_fleet::{create_schema, shard_of, DEFAULT_SHARDS};

/// Over how long the stored timers fall due.
const SPREAD_MS: i64 = 30 * 24 * 3600 * 1000;
/// Timers due within the window at each stage, which the node must fire.
const SAMPLE: usize = 1_000;
/// The first key of the samples, apart from the stored timers' keys.
const SAMPLE_KEYS: u64 = 1 << 40;
const TTL: Duration = Duration::from_secs(10);

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let stages: [u64; 3] = if quick {
        [10_000, 100_000, 1_000_000]
    } else {
        [100_000, 1_000_000, 10_000_000]
    };
    // Nothing here survives the run: the bulk load needs no durability.
    let server = TestServer::start_with(&["fsync=off", "synchronous_commit=off"]);
    let mut db = connect(&server);
    create_schema(&mut db, DEFAULT_SHARDS).expect("the schema");

    let mut stored = 0;
    let mut rows = Vec::new();
    for (stage, &target) in stages.iter().enumerate() {
        let start = Instant::now();
        fill(&mut db, stored, target);
        let fill_s = start.elapsed().as_secs_f64();
        stored = target;
        add_sample(&mut db, SAMPLE_KEYS + (stage * SAMPLE) as u64);
        let node = measure_node(&server, &format!("m{stage}"));
        println!(
            "{{\"impl\":\"timerwheel-fleet\",\"baseline\":false,\"workload\":\"fleet-memory\",\
             \"stored\":{stored},\"fill_s\":{fill_s:.1},\"take_all_s\":{:.3},\
             \"sample_fired\":{},\"peak_rss_kb\":{},\"rss_kb\":{}}}",
            node.take_all_s, node.fired, node.peak_rss_kb, node.rss_kb
        );
        assert_eq!(
            node.fired, SAMPLE,
            "the node fired {} of the window's {SAMPLE}",
            node.fired
        );
        rows.push((stored, node));
    }
    print_table(&rows);
}

/// What one node did and used at one stage.
struct Node {
    take_all_s: f64,
    fired: usize,
    peak_rss_kb: u64,
    rss_kb: u64,
}

/// Adds timers with keys `from..to`, named `charge`, due over the next 30 days from two
/// minutes on (beyond the window), with COPY.
fn fill(db: &mut postgres::Client, from: u64, to: u64) {
    let now = now_ms() + 120_000;
    let mut copy = db
        .copy_in("COPY tw_fleet_timers (shard, key, name, due_ms, payload, version) FROM STDIN")
        .expect("COPY");
    let mut line = String::new();
    for key in from..to {
        let due = now + (key.wrapping_mul(0x9e37_79b9) % SPREAD_MS as u64) as i64;
        line.clear();
        let shard = shard_of(key, DEFAULT_SHARDS);
        let _ = writeln!(
            line,
            "{shard}\t{key}\tcharge\t{due}\t\\\\x00010203\t{}",
            key + 1
        );
        copy.write_all(line.as_bytes()).expect("COPY data");
    }
    copy.finish().expect("COPY done");
    db.execute("SELECT setval('tw_fleet_version', $1)", &[&(to as i64 + 1)])
        .expect("the version sequence");
    db.batch_execute("ANALYZE tw_fleet_timers")
        .expect("ANALYZE");
}

/// `SAMPLE` timers with keys from `first`, due 3-13 s from now: inside the window.
fn add_sample(db: &mut postgres::Client, first: u64) {
    let now = now_ms();
    let keys: Vec<i64> = (first..first + SAMPLE as u64).map(|k| k as i64).collect();
    let shards: Vec<i32> = keys
        .iter()
        .map(|&k| shard_of(k as u64, DEFAULT_SHARDS))
        .collect();
    let dues: Vec<i64> = (0..SAMPLE as i64).map(|i| now + 3_000 + i * 10).collect();
    db.execute(
        "INSERT INTO tw_fleet_timers (shard, key, name, due_ms, payload, version)
         SELECT s, k, 'charge', d, '\\x00', nextval('tw_fleet_version')
         FROM unnest($1::int[], $2::bigint[], $3::bigint[]) AS t(s, k, d)",
        &[&shards, &keys, &dues],
    )
    .expect("the sample");
}

/// Starts a node, waits until it owns every shard and fired the sample, reads its memory,
/// and lets it leave.
fn measure_node(server: &TestServer, name: &str) -> Node {
    let start = Instant::now();
    let mut child = spawn_node(server, name, TTL, Stdio::piped());
    let (acquired, fired) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let stdout = BufReader::new(child.stdout.take().expect("its stdout"));
    let (a, f, name) = (acquired.clone(), fired.clone(), name.to_owned());
    let reader = std::thread::spawn(move || {
        for line in stdout.lines().map_while(|l| l.ok()) {
            if line.starts_with("acquired ") {
                a.fetch_add(1, Ordering::SeqCst);
            } else if is_sample_fire(&line) {
                f.fetch_add(1, Ordering::SeqCst);
            } else if line.starts_with("error ") {
                eprintln!("{name}: {line}");
            }
        }
    });
    let all = DEFAULT_SHARDS as usize;
    wait_for("every shard", Duration::from_secs(120), || {
        acquired.load(Ordering::SeqCst) >= all
    });
    let take_all_s = start.elapsed().as_secs_f64();
    wait_for("the sample's fires", Duration::from_secs(60), || {
        fired.load(Ordering::SeqCst) >= SAMPLE
    });
    // A few more polls and lease renewals, time moving on.
    std::thread::sleep(Duration::from_secs(3));
    let (peak_rss_kb, rss_kb) = memory_of(&child);
    drop(child.stdin.take()); // a planned leave
    child.wait().expect("the node's exit");
    reader.join().expect("the reader");
    Node {
        take_all_s,
        fired: fired.load(Ordering::SeqCst),
        peak_rss_kb,
        rss_kb,
    }
}

/// A line `fire KEY ...` of a sample's timer (a stored timer may fall due meanwhile too).
fn is_sample_fire(line: &str) -> bool {
    line.strip_prefix("fire ")
        .and_then(|rest| rest.split(' ').next()?.parse::<u64>().ok())
        .is_some_and(|key| key >= SAMPLE_KEYS)
}

fn wait_for(what: &str, timeout: Duration, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `VmHWM` and `VmRSS` of a child, in kB.
fn memory_of(child: &Child) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).expect("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn print_table(rows: &[(u64, Node)]) {
    let first = rows[0].1.peak_rss_kb as f64;
    println!("\n| timers stored | node peak RSS | vs the first stage | took every shard in |");
    println!("|---|---|---|---|");
    for (stored, node) in rows {
        println!(
            "| {stored} | {:.1} MB | {:.2}x | {:.2} s |",
            node.peak_rss_kb as f64 / 1024.0,
            node.peak_rss_kb as f64 / first,
            node.take_all_s
        );
    }
}
