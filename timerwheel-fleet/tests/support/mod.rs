//! Nodes as real processes (the `fleet-node` binary) against a private cluster, and what
//! the tests read of the shards table.

#![allow(dead_code)] // each test binary uses a part

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use timerwheel_core::durable::Ack;
use timerwheel_fleet::server::TestServer;
use timerwheel_fleet::{
    add_timer, create_schema, ConnectOptions, Fire, NewTimer, Runner, Settings,
};

/// A cluster with the schema of `shards` shards.
pub fn fleet_server(shards: i32) -> TestServer {
    let server = TestServer::start();
    create_schema(&mut connect(&server), shards).expect("the schema");
    server
}

pub fn connect(server: &TestServer) -> postgres::Client {
    ConnectOptions::parse(&server.conninfo())
        .and_then(|o| o.connect())
        .expect("the test server")
}

/// A `fleet-node` process; killed when dropped (also when a test panics).
pub struct NodeProcess {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout lines, each with when it came (ms since the Unix epoch).
    lines: Arc<Mutex<Vec<(i64, String)>>>,
}

impl NodeProcess {
    pub fn spawn(server: &TestServer, name: &str, ttl: Duration, hold_acks: bool) -> Self {
        Self::spawn_with(server, name, ttl, hold_acks, &[])
    }

    /// [`spawn`](Self::spawn) with more arguments (`--poll-ms`, `--window-ms`).
    pub fn spawn_with(
        server: &TestServer,
        name: &str,
        ttl: Duration,
        hold_acks: bool,
        more: &[&str],
    ) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fleet-node"));
        command
            .args([name, &ttl.as_millis().to_string()])
            .args(more)
            .env("TW_FLEET_CONNINFO", server.conninfo())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if hold_acks {
            command.arg("--hold-acks");
        }
        let mut child = command.spawn().expect("fleet-node");
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push((now_ms(), line));
            }
        });
        Self {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {}", self.pid());
    }

    /// Sends `ack`: a node started with `hold_acks` acknowledges what it holds.
    pub fn send_ack(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "ack").unwrap();
        stdin.flush().unwrap();
    }

    /// Closes its stdin (a planned leave) and waits for it to end.
    pub fn leave(mut self) {
        self.stdin.take();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{} ended with {status}", self.name);
    }

    pub fn lines(&self) -> Vec<String> {
        self.timed_lines().into_iter().map(|(_, l)| l).collect()
    }

    /// Its lines with when each came.
    pub fn timed_lines(&self) -> Vec<(i64, String)> {
        self.lines.lock().unwrap().clone()
    }

    /// The first line starting with `prefix`, waiting up to `timeout`.
    pub fn wait_line(&self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| l.starts_with(prefix)) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "{}: no line `{prefix}` in {timeout:?}: {:?}",
                self.name,
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The fires it reported: (key, occurrence) -> the shard epochs it was delivered under.
    pub fn fires(&self) -> Vec<Fired> {
        self.timed_lines()
            .iter()
            .filter_map(|(at, l)| Some((at, l.strip_prefix("fire ")?)))
            .map(|(at, rest)| {
                let f: Vec<&str> = rest.split(' ').collect();
                Fired {
                    key: f[0].parse().unwrap(),
                    occurrence_ms: f[2].parse().unwrap(),
                    shard: f[4].parse().unwrap(),
                    epoch: f[5].parse().unwrap(),
                    at_ms: *at,
                }
            })
            .collect()
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fired {
    pub key: u64,
    pub occurrence_ms: i64,
    pub shard: i32,
    pub epoch: i64,
    /// When the test read its line (ms since the Unix epoch).
    pub at_ms: i64,
}

/// Shards under a live lease, by owner (on the database's clock).
pub fn live_owners(client: &mut postgres::Client) -> BTreeMap<String, Vec<i32>> {
    let mut owners: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for row in client
        .query(
            "SELECT owner, shard FROM tw_fleet_shards
             WHERE owner IS NOT NULL AND lease_until > now() ORDER BY shard",
            &[],
        )
        .unwrap()
    {
        owners.entry(row.get(0)).or_default().push(row.get(1));
    }
    owners
}

/// Each shard's epoch.
pub fn epochs(client: &mut postgres::Client) -> BTreeMap<i32, i64> {
    client
        .query("SELECT shard, epoch FROM tw_fleet_shards", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// Waits up to `timeout` for `done` over the live owners; returns the time it took.
pub fn wait_owners(
    client: &mut postgres::Client,
    timeout: Duration,
    done: impl Fn(&BTreeMap<String, Vec<i32>>) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        let owners = live_owners(client);
        if done(&owners) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < timeout,
            "owners not as expected after {timeout:?}: {owners:?}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Counts of shards held by each of `names`, all of them summing to `shards`.
pub fn held_by(owners: &BTreeMap<String, Vec<i32>>, names: &[&str]) -> Vec<usize> {
    names
        .iter()
        .map(|n| owners.get(*n).map_or(0, Vec::len))
        .collect()
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Adds the one-shot timer (key, "charge") due at `due_ms`.
pub fn add_charge(client: &mut postgres::Client, shards: i32, key: u64, due_ms: i64) {
    add_named(client, shards, (key, "charge"), due_ms, 0);
}

/// Adds the timer (key, name) due first at `due_ms`, then every `period_ms` (0: once).
pub fn add_named(
    client: &mut postgres::Client,
    shards: i32,
    (key, name): (u64, &str),
    due_ms: i64,
    period_ms: i64,
) {
    let timer = NewTimer {
        key,
        name,
        payload: b"",
        due_ms,
        period_ms,
        replace: false,
    };
    add_timer(client, shards, &timer).unwrap();
}

/// The fires a [`Runner`]'s handler got, with when (ms since the Unix epoch).
pub type Log = Arc<Mutex<Vec<(Fire, i64)>>>;

/// A [`Runner`] named "a" in this process, its handler of "charge" logging each fire and
/// answering `ack`; returns once it holds all `shards`.
pub fn start_runner(
    server: &TestServer,
    shards: i32,
    settings: Settings,
    ack: Ack,
) -> (Runner, Log) {
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let runner = Runner::builder()
        .settings(settings)
        .handler("charge", move |fire| {
            sink.lock().unwrap().push((fire.clone(), now_ms()));
            ack
        })
        .start(&ConnectOptions::parse(&server.conninfo()).unwrap(), "a")
        .unwrap();
    wait_for("the leases", Duration::from_secs(30), || {
        runner.firing().len() == shards as usize
    });
    (runner, log)
}

/// Waits up to `timeout` for `done`; fails the test naming `what` after it.
pub fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not after {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The keys of the fires in `log`, in the order they came.
pub fn keys(log: &Log) -> Vec<u64> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(f, _)| f.token.key)
        .collect()
}
