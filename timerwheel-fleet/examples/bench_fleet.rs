//! `make bench-fleet`: timers created and fired per second by three `fleet-node` processes
//! and a private PostgreSQL together, against a baseline measured in the same run on the
//! same server: a plain job table, the same inserts, claimed by three threads with
//! `FOR UPDATE SKIP LOCKED` (no leases, no fences, no fire records); then the lateness of
//! timers added inside the nodes' window (each node's own reading: its wall clock at the
//! handler against the occurrence), and the failover time after `kill -9` of one node (TTL
//! 2 s). One JSON object per line. `--quick`: fewer timers.
//!
//! Where the time goes: each side is also measured in two phases, the adds alone (timers
//! due in an hour, nothing claimed) and the fires alone (every stored timer made due at
//! once by one UPDATE, then claimed until none is left; the nodes find them by their poll).
//!
//! Both sides write `PER_COMMIT` rows per transaction in one statement: the fleet with
//! `add_timers`, the job table with one `INSERT ... SELECT FROM unnest(...)`; then each
//! side adds a fifth as many one statement per timer (a node's `add`).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::types::Type;
use support::{connect, now_ms, spawn_node};
use timerwheel_fleet::server::TestServer;
use timerwheel_fleet::{add_timers, create_schema, ConnectOptions, NewTimer, DEFAULT_SHARDS};

const WRITERS: u64 = 3;
const PER_COMMIT: u64 = 100;
const TTL: Duration = Duration::from_secs(2);

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: u64 = if quick { 15_000 } else { 90_000 };
    let server = TestServer::start();
    let mut db = connect(&server);
    create_schema(&mut db, DEFAULT_SHARDS).expect("the schema");

    let baseline = baseline(&server, n);
    report("pg-skip-locked", true, n, baseline);
    let baseline_split = split(
        &server,
        n,
        "jobs",
        "SELECT count(*) FROM jobs",
        insert_jobs,
        || Claimers::start(&server),
    );
    let lateness = Lateness::default();
    let mut nodes: Vec<Child> = ["a", "b", "c"]
        .iter()
        .map(|m| spawn_node(&server, m, TTL, Stdio::piped()))
        .collect();
    nodes.iter_mut().for_each(|node| lateness.follow(node));
    wait_until(&mut db, Duration::from_secs(60), |owners| owners == 3);
    let fleet = fleet(&server, n);
    report("timerwheel-fleet", false, n, fleet);
    println!(
        "{{\"impl\":\"timerwheel-fleet\",\"baseline\":false,\"workload\":\"fleet-mixed\",\
         \"created_ratio\":{:.3},\"fired_ratio\":{:.3}}}",
        fleet.0 / baseline.0,
        fleet.1 / baseline.1
    );

    let fleet_split = split(&server, n, "tw_fleet_timers", LEFT, add_charges, || ());
    // One statement per add, as a node's `add` writes it: keys past those used above.
    let one_by_one = |add: fn(&mut postgres::Transaction<'_>, &[u64], i64)| {
        let later = now_ms() + 3_600_000;
        let added = write_all(&server, n / 5, |tx, keys| {
            keys.iter().for_each(|k| add(tx, &[k + 2 * n], later))
        });
        (n / 5) as f64 / added
    };
    let (ours_one, theirs_one) = (one_by_one(add_charges), one_by_one(insert_jobs));
    for (workload, count, ours, theirs) in [
        ("fleet-add-only", n, fleet_split.0, baseline_split.0),
        ("fleet-fire-only", n, fleet_split.1, baseline_split.1),
        ("fleet-add-one-by-one", n / 5, ours_one, theirs_one),
    ] {
        println!(
            "{{\"impl\":\"timerwheel-fleet\",\"baseline\":false,\"workload\":\"{workload}\",\
             \"n\":{count},\"per_s\":{ours:.0},\"baseline_per_s\":{theirs:.0},\"ratio\":{:.3}}}",
            ours / theirs
        );
    }

    // Each timer due in a millisecond of its own: a wake-up and a claim each.
    for (count, spacing_ms) in [(n / 15, 5), (n / 5, 1)] {
        let late = lateness.of_timers_in_the_window(&server, count, spacing_ms);
        println!(
            "{{\"impl\":\"timerwheel-fleet\",\"baseline\":false,\"workload\":\"fleet-lateness\",\
             \"n\":{count},\"due_per_s\":{},\"late_p50_us\":{},\"late_p99_us\":{},\
             \"late_max_us\":{},\"p99_to_target\":{:.3}}}",
            1000 / spacing_ms,
            late.p50,
            late.p99,
            late.max,
            late.p99 as f64 / 10_000.0
        );
    }

    nodes[2].kill().expect("kill -9");
    let start = Instant::now();
    wait_until(&mut db, Duration::from_secs(60), |owners| owners == 2);
    let failover = start.elapsed().as_secs_f64();
    println!(
        "{{\"impl\":\"timerwheel-fleet\",\"baseline\":false,\"workload\":\"fleet-failover\",\
         \"n\":1,\"ttl_s\":{},\"failover_s\":{failover:.3},\"bound_ratio\":{:.3}}}",
        TTL.as_secs_f64(),
        failover / (TTL.as_secs_f64() + 1.0)
    );
    for node in &mut nodes {
        let _ = node.kill();
        let _ = node.wait();
    }
}

/// The keys of the lateness phase, past every key the other phases use.
const LATE_KEYS: u64 = 1 << 40;

/// The lateness the nodes report for the timers of the lateness phase (`LATE_KEYS` on).
#[derive(Clone, Default)]
struct Lateness {
    late_us: Arc<std::sync::Mutex<Vec<i64>>>,
    /// Phases so far: each adds keys of its own.
    phases: Arc<std::sync::atomic::AtomicU64>,
}

struct Percentiles {
    p50: i64,
    p99: i64,
    max: i64,
}

impl Lateness {
    /// Reads the node's stdout to its end (every line, so that the node never waits on a
    /// full pipe), keeping the lateness of the phase's fires.
    fn follow(&self, node: &mut Child) {
        let out = node.stdout.take().expect("a piped stdout");
        let late_us = Arc::clone(&self.late_us);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(late) = phase_fire_lateness(&line) {
                    late_us.lock().unwrap().push(late);
                }
            }
        });
    }

    /// Adds `count` timers due one every `spacing_ms` from a second on (inside every
    /// node's window), in batches of `PER_COMMIT`, and waits for their fires.
    fn of_timers_in_the_window(
        &self,
        server: &TestServer,
        count: u64,
        spacing_ms: u64,
    ) -> Percentiles {
        let first_due = now_ms() + 1000;
        let mut db = connect(server);
        let first_key = LATE_KEYS + self.phases.fetch_add(1, Ordering::Relaxed) * (1 << 32);
        let keys: Vec<u64> = (first_key..first_key + count).collect();
        for batch in keys.chunks(PER_COMMIT as usize) {
            let mut tx = db.transaction().expect("a transaction");
            for &key in batch {
                let due_ms = first_due + ((key - first_key) * spacing_ms) as i64;
                add_charges(&mut tx, &[key], due_ms);
            }
            tx.commit().expect("commit");
        }
        let start = Instant::now();
        while self.late_us.lock().unwrap().len() < count as usize {
            assert!(start.elapsed() < Duration::from_secs(120), "fires missing");
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut late = std::mem::take(&mut *self.late_us.lock().unwrap());
        late.sort_unstable();
        let at = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize];
        Percentiles {
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// The `LATE_US` of a line `fire KEY NAME OCCURRENCE_MS VERSION SHARD EPOCH LATE_US` whose
/// key is the lateness phase's.
fn phase_fire_lateness(line: &str) -> Option<i64> {
    let fields: Vec<&str> = line.strip_prefix("fire ")?.split(' ').collect();
    let key: u64 = fields.first()?.parse().ok()?;
    (key >= LATE_KEYS).then(|| fields.get(6)?.parse().ok())?
}

fn report(name: &str, baseline: bool, n: u64, (created, fired): (f64, f64)) {
    println!(
        "{{\"impl\":\"{name}\",\"baseline\":{baseline},\"workload\":\"fleet-mixed\",\"n\":{n},\
         \"created_per_s\":{created:.0},\"fired_per_s\":{fired:.0}}}"
    );
}

/// What is left to fire in the fleet.
const LEFT: &str =
    "SELECT (SELECT count(*) FROM tw_fleet_timers) + (SELECT count(*) FROM tw_fleet_fires)";

/// Created per second and fired per second: writers add `n` timers due at once, the
/// nodes fire them as they come; fired counts up to the last one acknowledged.
fn fleet(server: &TestServer, n: u64) -> (f64, f64) {
    let start = Instant::now();
    let created = write_all(server, n, |tx, keys| add_charges(tx, keys, now_ms()));
    wait_empty(&mut connect(server), LEFT);
    (n as f64 / created, n as f64 / start.elapsed().as_secs_f64())
}

const PAYLOAD: &[u8] = b"0123456789abcdef";

fn add_charges(tx: &mut postgres::Transaction<'_>, keys: &[u64], due_ms: i64) {
    let timers: Vec<NewTimer<'_>> = keys
        .iter()
        .map(|&key| NewTimer {
            key,
            name: "charge",
            payload: PAYLOAD,
            due_ms,
            period_ms: 0,
            replace: false,
        })
        .collect();
    let outcomes = add_timers(tx, DEFAULT_SHARDS, &timers).expect("add");
    assert!(outcomes.iter().all(Result::is_ok), "an add refused");
}

fn insert_jobs(tx: &mut postgres::Transaction<'_>, keys: &[u64], due_ms: i64) {
    let keys: Vec<i64> = keys.iter().map(|&k| k as i64).collect();
    tx.execute_typed(
        "INSERT INTO jobs (key, due_ms, payload)
         SELECT k, $2, $3 FROM unnest($1::bigint[]) AS k",
        &[
            (&keys, Type::INT8_ARRAY),
            (&due_ms, Type::INT8),
            (&PAYLOAD, Type::BYTEA),
        ],
    )
    .expect("insert");
}

/// The same load on a plain job table claimed by three threads.
fn baseline(server: &TestServer, n: u64) -> (f64, f64) {
    let mut db = connect(server);
    db.batch_execute(
        "CREATE TABLE jobs (id bigserial PRIMARY KEY, key bigint NOT NULL,
                            due_ms bigint NOT NULL, payload bytea NOT NULL);
         CREATE INDEX jobs_due ON jobs (due_ms);",
    )
    .expect("the job table");
    let claimers = Claimers::start(server);
    let start = Instant::now();
    let created = write_all(server, n, |tx, keys| insert_jobs(tx, keys, now_ms()));
    wait_empty(&mut db, "SELECT count(*) FROM jobs");
    let fired = n as f64 / start.elapsed().as_secs_f64();
    drop(claimers);
    (n as f64 / created, fired)
}

/// Adds per second with nothing due (`add` of `n` rows due in an hour), then fired per
/// second once one UPDATE of `table` made them all due, until `left` counts none; the
/// claimers run from `claim()` until the end.
fn split<C>(
    server: &TestServer,
    n: u64,
    table: &str,
    left: &str,
    add: impl Fn(&mut postgres::Transaction<'_>, &[u64], i64) + Sync,
    claim: impl FnOnce() -> C,
) -> (f64, f64) {
    let later = now_ms() + 3_600_000;
    let added = write_all(server, n, |tx, keys| {
        let keys: Vec<u64> = keys.iter().map(|k| k + n).collect();
        add(tx, &keys, later)
    });
    let claimers = claim();
    let mut db = connect(server);
    let start = Instant::now();
    db.execute(&format!("UPDATE {table} SET due_ms = $1"), &[&now_ms()])
        .expect("all due");
    wait_empty(&mut db, left);
    let fired = n as f64 / start.elapsed().as_secs_f64();
    drop(claimers);
    (n as f64 / added, fired)
}

/// Three threads claiming due jobs until dropped.
struct Claimers {
    done: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Claimers {
    fn start(server: &TestServer) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let threads = (0..WRITERS)
            .map(|_| {
                let (conninfo, done) = (server.conninfo(), Arc::clone(&done));
                std::thread::spawn(move || claim_jobs(&conninfo, &done))
            })
            .collect();
        Self { done, threads }
    }
}

impl Drop for Claimers {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        self.threads.drain(..).for_each(|c| c.join().unwrap());
    }
}

fn claim_jobs(conninfo: &str, done: &AtomicBool) {
    let mut client = ConnectOptions::parse(conninfo).unwrap().connect().unwrap();
    while !done.load(Ordering::SeqCst) {
        let claimed = client
            .execute(
                "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE due_ms <= $1
                 ORDER BY due_ms LIMIT 500 FOR UPDATE SKIP LOCKED)",
                &[&now_ms()],
            )
            .expect("claim");
        if claimed == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Runs `add` for keys 0..n from three writers, `PER_COMMIT` keys per call and
/// transaction; returns the seconds it took.
fn write_all(
    server: &TestServer,
    n: u64,
    add: impl Fn(&mut postgres::Transaction<'_>, &[u64]) + Sync,
) -> f64 {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let add = &add;
            let mut client = connect(server);
            scope.spawn(move || {
                let keys: Vec<u64> = (0..n).filter(|k| k % WRITERS == writer).collect();
                for chunk in keys.chunks(PER_COMMIT as usize) {
                    let mut tx = client.transaction().unwrap();
                    add(&mut tx, chunk);
                    tx.commit().unwrap();
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

fn wait_empty(db: &mut postgres::Client, count: &str) {
    while db.query_one(count, &[]).unwrap().get::<_, i64>(0) > 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `done(number of nodes with a live lease)` and every shard is held.
fn wait_until(db: &mut postgres::Client, timeout: Duration, done: impl Fn(i64) -> bool) {
    let start = Instant::now();
    loop {
        let row = db
            .query_one(
                "SELECT count(DISTINCT owner), count(*) FROM tw_fleet_shards
                 WHERE owner IS NOT NULL AND lease_until > now()",
                &[],
            )
            .unwrap();
        if done(row.get(0)) && row.get::<_, i64>(1) == DEFAULT_SHARDS as i64 {
            return;
        }
        assert!(start.elapsed() < timeout, "the fleet did not settle");
        std::thread::sleep(Duration::from_millis(20));
    }
}
