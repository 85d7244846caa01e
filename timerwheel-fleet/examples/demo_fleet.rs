//! `make demo-fleet`: the billing simulation on a fleet of three processes against a
//! private PostgreSQL, one of them SIGKILLed mid-run, and the ledger checked.
//!
//! Each session charges once a second (a periodic durable timer "charge", keyed by the
//! session). A node's handler writes the charge to the ledger under the fire's token (key,
//! name, occurrence, version: a primary key) in its own transaction, then acknowledges it;
//! a fire delivered again (the killed node's unacknowledged ones, taken over) finds its
//! charge there and is counted as a recognised duplicate. After the run the sessions end
//! (their timers deleted) and the ledger is checked:
//!
//! - every point that fell due up to `TTL + 1 s` before the end is charged exactly once
//!   (later ones may be in flight at the end: charged once or not at all);
//! - no charge for a point that is not one of the session's, or after the end;
//! - the lateness of the charges of the killed node's shards that fell due after the kill
//!   is within TTL + 1 s (the lease expires, the others take the shards at their next tick,
//!   load their window and claim).
//!
//! Usage: `demo_fleet [--sessions N] [--seconds S]`; `demo_fleet --node NAME` is one node
//! (the connection string in `TW_FLEET_CONNINFO`).

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use postgres::Client;
use timerwheel_core::durable::Ack;
use timerwheel_fleet::server::TestServer;
use timerwheel_fleet::{
    add_timer, create_schema, ConnectOptions, Fire, NewTimer, Runner, Settings,
};

const SHARDS: i32 = 64;
const TTL: Duration = Duration::from_secs(2);
const PERIOD_MS: i64 = 1_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(name) = arg(&args, "--node") {
        node(&name);
        return;
    }
    let sessions: u64 = arg(&args, "--sessions").map_or(300, |v| v.parse().expect("N"));
    let seconds: i64 = arg(&args, "--seconds").map_or(14, |v| v.parse().expect("S"));
    if let Err(failure) = run(sessions, seconds) {
        eprintln!("demo-fleet: FAILED: {failure}");
        std::process::exit(1);
    }
    println!("demo-fleet: ok");
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

/// One node: charges into the ledger, then acknowledges; runs until killed or stdin ends.
fn node(name: &str) {
    let conninfo = std::env::var("TW_FLEET_CONNINFO").expect("TW_FLEET_CONNINFO");
    let options = ConnectOptions::parse(&conninfo).expect("a connection string");
    let ledger = Mutex::new(options.connect().expect("the ledger's connection"));
    let node_name = name.to_owned();
    let runner = Runner::builder()
        .settings(Settings {
            ttl: TTL,
            ..Settings::default()
        })
        .handler("charge", move |fire| charge(&ledger, &node_name, fire))
        .start(&options, name)
        .expect("the node starts");
    let _ = std::io::stdin().read_line(&mut String::new());
    runner.leave().expect("a planned leave");
}

/// The application's effect: the charge and its token in one transaction; a token already
/// there is a duplicate, recognised. Acknowledged once the charge is committed.
fn charge(ledger: &Mutex<Client>, node: &str, fire: &Fire) -> Ack {
    let t = &fire.token;
    let mut ledger = ledger.lock().unwrap();
    let inserted = ledger.execute(
        "INSERT INTO demo_ledger (key, name, occurrence_ms, version, node, charged_at_ms)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        &[
            &(t.key as i64),
            &t.name,
            &t.occurrence_ms,
            &t.version,
            &node,
            &now_ms(),
        ],
    );
    match inserted {
        Ok(1) => Ack::Now,
        Ok(_) => {
            let _ = ledger.execute(
                "INSERT INTO demo_duplicates (key, occurrence_ms, node) VALUES ($1, $2, $3)",
                &[&(t.key as i64), &t.occurrence_ms, &node],
            );
            Ack::Now
        }
        Err(_) => Ack::Later, // not charged: delivered again, the same token
    }
}

fn run(sessions: u64, seconds: i64) -> Result<(), String> {
    let server = TestServer::start();
    let options = ConnectOptions::parse(&server.conninfo()).map_err(|e| e.to_string())?;
    let mut db = options.connect().map_err(|e| e.to_string())?;
    create_schema(&mut db, SHARDS).map_err(|e| e.to_string())?;
    db.batch_execute(
        "CREATE TABLE demo_ledger (key bigint, name text, occurrence_ms bigint,
             version bigint, node text, charged_at_ms bigint,
             PRIMARY KEY (key, name, occurrence_ms, version));
         CREATE TABLE demo_duplicates (key bigint, occurrence_ms bigint, node text);",
    )
    .map_err(|e| e.to_string())?;

    let mut nodes: Vec<Child> = ["a", "b", "c"]
        .iter()
        .map(|name| spawn(&server, name))
        .collect();
    wait_for(&mut db, "three nodes holding shards", |db| {
        owners(db).len() == 3
    })?;
    let start = now_ms() + 1_000;
    let first = |key: u64| start + (key as i64 * PERIOD_MS) / sessions as i64;
    for key in 0..sessions {
        let timer = NewTimer {
            key,
            name: "charge",
            payload: b"",
            due_ms: first(key),
            period_ms: PERIOD_MS,
            replace: false,
        };
        add_timer(&mut db, SHARDS, &timer).map_err(|e| e.to_string())?;
    }
    println!("demo-fleet: {sessions} sessions charging every {PERIOD_MS} ms on nodes a, b, c");

    sleep_until(start + seconds * 1_000 * 2 / 5);
    let victim = owners(&mut db).remove("c").unwrap_or_default();
    let killed_at = now_ms();
    nodes[2].kill().map_err(|e| format!("kill -9: {e}"))?;
    let _ = nodes[2].wait();
    println!(
        "demo-fleet: node c SIGKILLed holding {} shards",
        victim.len()
    );

    let end = start + seconds * 1_000;
    sleep_until(end);
    db.execute("DELETE FROM tw_fleet_timers", &[])
        .map_err(|e| e.to_string())?;
    let ended = now_ms();
    wait_for(&mut db, "every fire acknowledged", |db| {
        count(db, "SELECT count(*) FROM tw_fleet_fires") == 0
    })?;
    for node in &mut nodes[..2] {
        drop(node.stdin.take()); // a planned leave
        let _ = node.wait();
    }
    check(&mut db, sessions, first, (killed_at, ended), &victim)
}

/// The ledger's checks (see the module's doc).
fn check(
    db: &mut Client,
    sessions: u64,
    first: impl Fn(u64) -> i64,
    (killed_at, ended): (i64, i64),
    victim: &[i32],
) -> Result<(), String> {
    let sure = ended - TTL.as_millis() as i64 - 1_000;
    let rows = db
        .query(
            "SELECT key, occurrence_ms, charged_at_ms FROM demo_ledger ORDER BY key, occurrence_ms",
            &[],
        )
        .map_err(|e| e.to_string())?;
    let mut charged: BTreeMap<(u64, i64), i64> = BTreeMap::new();
    for row in &rows {
        let key = row.get::<_, i64>(0) as u64;
        charged.insert((key, row.get(1)), row.get(2));
    }
    let mut due = 0;
    for key in 0..sessions {
        let mut point = first(key);
        while point <= sure {
            if !charged.contains_key(&(key, point)) {
                return Err(format!(
                    "session {key}: the charge due at {point} is missing"
                ));
            }
            due += 1;
            point += PERIOD_MS;
        }
    }
    for &(key, point) in charged.keys() {
        let off = (point - first(key)) % PERIOD_MS != 0 || point < first(key);
        if key >= sessions || off || point > ended {
            return Err(format!(
                "session {key}: a charge at {point} that never fell due"
            ));
        }
    }
    let taken: Vec<i64> = charged
        .iter()
        .filter(|((key, point), _)| {
            *point > killed_at && victim.contains(&timerwheel_fleet::shard_of(*key, SHARDS))
        })
        .map(|((_, point), at)| at - point)
        .collect();
    let worst = taken.iter().copied().max().unwrap_or(0);
    let bound = TTL.as_millis() as i64 + 1_000;
    let duplicates = count(db, "SELECT count(*) FROM demo_duplicates");
    println!(
        "demo-fleet: {} charges in the ledger, each once; {due} fell due before the end's \
         margin, none missing; {duplicates} redelivered fires recognised by their token",
        charged.len()
    );
    println!(
        "demo-fleet: {} charges of the killed node's shards after the kill, the latest {worst} \
         ms late (bound: TTL + 1 s = {bound} ms)",
        taken.len()
    );
    if taken.is_empty() {
        return Err("nothing of the killed node's shards was charged after the kill".into());
    }
    if worst > bound {
        return Err(format!("a taken-over charge came {worst} ms late"));
    }
    Ok(())
}

fn spawn(server: &TestServer, name: &str) -> Child {
    Command::new(std::env::current_exe().expect("this program"))
        .args(["--node", name])
        .env("TW_FLEET_CONNINFO", server.conninfo())
        .stdin(Stdio::piped())
        .spawn()
        .expect("a node process")
}

/// The shards under a live lease, by owner.
fn owners(db: &mut Client) -> BTreeMap<String, Vec<i32>> {
    let mut owners: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let rows = db
        .query(
            "SELECT owner, shard FROM tw_fleet_shards
             WHERE owner IS NOT NULL AND lease_until > now()",
            &[],
        )
        .expect("the shards");
    for row in rows {
        owners.entry(row.get(0)).or_default().push(row.get(1));
    }
    owners
}

fn count(db: &mut Client, query: &str) -> i64 {
    db.query_one(query, &[]).map_or(-1, |r| r.get(0))
}

fn wait_for(db: &mut Client, what: &str, done: impl Fn(&mut Client) -> bool) -> Result<(), String> {
    let deadline = now_ms() + 60_000;
    while !done(db) {
        if now_ms() > deadline {
            return Err(format!("no {what} within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn sleep_until(ms: i64) {
    let wait = ms - now_ms();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
