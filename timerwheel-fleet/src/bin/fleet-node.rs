//! One node of a fleet, as a process: the tests and the benchmark start several, kill,
//! stop and resume them. It ticks its leases, takes over the unacknowledged fires of the
//! shards it acquires, claims due timers in batches and acknowledges them, and reports
//! each step on stdout, one line each:
//!
//! ```text
//! acquired SHARD EPOCH | released SHARD | lost SHARD
//! fire KEY NAME OCCURRENCE_MS VERSION SHARD EPOCH
//! ack ok COUNT | ack refused SHARD EPOCH
//! error MESSAGE | reconnected
//! ```
//!
//! A broken connection (the server restarted, or ended a session that was stopped inside a
//! transaction) is opened again; what it held is checked at the next tick.
//!
//! Usage: `fleet-node NAME TTL_MS [--hold-acks]`, the connection string in
//! `TW_FLEET_CONNINFO` (never on the command line, where `ps` shows it). With
//! `--hold-acks` fires wait for a line `ack` on stdin. End of stdin: a planned leave.

use std::io::{BufRead, Write};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use timerwheel_fleet::{ack, claim_due, take_over_fires, ConnectOptions, Fire, FleetError, Node};

/// Timers claimed per transaction.
const BATCH: i64 = 500;
/// The pause when nothing was due.
const IDLE: Duration = Duration::from_millis(5);

enum Command {
    Ack,
    Leave,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: fleet-node NAME TTL_MS [--hold-acks]");
        std::process::exit(2);
    }
    let ttl = Duration::from_millis(args[2].parse().expect("TTL_MS"));
    let hold_acks = args.iter().any(|a| a == "--hold-acks");
    if let Err(error) = run(&args[1], ttl, hold_acks) {
        say(&format!("error {error}"));
        std::process::exit(1);
    }
}

fn run(name: &str, ttl: Duration, hold_acks: bool) -> Result<(), FleetError> {
    let conninfo = std::env::var("TW_FLEET_CONNINFO").unwrap_or_default();
    let options = ConnectOptions::parse(&conninfo)?;
    let mut node = Node::join(options.connect()?, name, ttl)?;
    let commands = read_commands();
    let mut pending: Vec<Fire> = Vec::new();
    let mut next_tick = Instant::now();
    loop {
        match step(
            &mut node,
            &commands,
            &mut pending,
            &mut next_tick,
            hold_acks,
        ) {
            Ok(true) => {}
            Ok(false) => return node.leave(),
            Err(error) if node.client().is_closed() => {
                say(&format!("error {error}"));
                reconnect(&mut node, &options);
            }
            Err(error) => return Err(error),
        }
    }
}

/// Connects again, every 100 ms until the server answers.
fn reconnect(node: &mut Node, options: &ConnectOptions) {
    loop {
        std::thread::sleep(Duration::from_millis(100));
        match options.connect().and_then(|client| node.reconnect(client)) {
            Ok(()) => return say("reconnected"),
            Err(error) => say(&format!("error {error}")),
        }
    }
}

/// One round: a command, a tick when due, a claim, the acks; `false` to leave.
fn step(
    node: &mut Node,
    commands: &Receiver<Command>,
    pending: &mut Vec<Fire>,
    next_tick: &mut Instant,
    hold_acks: bool,
) -> Result<bool, FleetError> {
    let name = node.name().to_owned();
    match commands.try_recv() {
        Ok(Command::Ack) => acknowledge(node, pending)?,
        Ok(Command::Leave) | Err(TryRecvError::Disconnected) => return Ok(false),
        Err(TryRecvError::Empty) => {}
    }
    if Instant::now() >= *next_tick {
        *next_tick = Instant::now() + node.renew_interval();
        pending.extend(tick(node)?);
    }
    let held: Vec<(i32, i64)> = node.held().iter().map(|(s, e)| (*s, *e)).collect();
    let fires = match claim_due(node.client(), &name, &held, now_ms(), BATCH) {
        Err(FleetError::Fenced { .. }) => Vec::new(), // the next tick drops the shard
        other => other?,
    };
    fires.iter().for_each(report_fire);
    let idle = fires.is_empty();
    pending.extend(fires);
    if !hold_acks {
        acknowledge(node, pending)?;
    }
    if idle {
        std::thread::sleep(IDLE);
    }
    Ok(true)
}

/// Ticks the leases and takes over the unacknowledged fires of the shards acquired.
fn tick(node: &mut Node) -> Result<Vec<Fire>, FleetError> {
    let change = node.tick()?;
    change.lost.iter().for_each(|s| say(&format!("lost {s}")));
    change
        .released
        .iter()
        .for_each(|s| say(&format!("released {s}")));
    let mut fires = Vec::new();
    for (shard, epoch) in change.acquired {
        say(&format!("acquired {shard} {epoch}"));
        let name = node.name().to_owned();
        let taken = take_over_fires(node.client(), &name, shard, epoch)?;
        taken.iter().for_each(report_fire);
        fires.extend(taken);
    }
    Ok(fires)
}

/// Acknowledges the pending fires, shard by shard: a refused shard's fires are dropped
/// (their new owner delivers them again).
fn acknowledge(node: &mut Node, pending: &mut Vec<Fire>) -> Result<(), FleetError> {
    pending.sort_by_key(|f| (f.token.shard, f.token.shard_epoch));
    let name = node.name().to_owned();
    for group in pending.chunk_by(|a, b| a.token.shard == b.token.shard) {
        let tokens: Vec<_> = group.iter().map(|f| f.token.clone()).collect();
        match ack(node.client(), &name, &tokens) {
            Ok(n) => say(&format!("ack ok {n}")),
            Err(FleetError::Fenced { shard, epoch }) => {
                say(&format!("ack refused {shard} {epoch}"))
            }
            Err(other) => return Err(other),
        }
    }
    pending.clear();
    Ok(())
}

fn report_fire(fire: &Fire) {
    let t = &fire.token;
    say(&format!(
        "fire {} {} {} {} {} {}",
        t.key, t.name, t.occurrence_ms, t.version, t.shard, t.shard_epoch
    ));
}

/// `ack` lines from stdin; its end is a planned leave.
fn read_commands() -> Receiver<Command> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            match line.as_deref() {
                Ok("ack") => {
                    let _ = sender.send(Command::Ack);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = sender.send(Command::Leave);
    });
    receiver
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
