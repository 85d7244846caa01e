//! Durable timers against SIGKILL: a child process adds, resets and deletes durable timers
//! from 4 threads, in sync mode or in async mode with a delay of [`ASYNC_DELAY_MS`], while
//! they fire, writing a record of every call before and
//! after it (and of every fire and acknowledgement) to a file; the parent kills it at a
//! random moment, reads the store, checks it against the record, and starts the next child
//! on the same store. `TW_KILLS` kills (10 by default; `make test-durable-kill` runs 100).
//!
//! Checked after each kill, where in async mode a change or acknowledgement whose call
//! returned less than the delay plus [`MARGIN_MS`] before the kill (the record says when)
//! counts as never returned, since async mode may lose it:
//! - a change whose call returned is in the store (a deleted timer is absent, a periodic
//!   one present, a one-shot present at its deadline or its fire recorded in the store);
//! - no occurrence lost: every fire the child saw and did not begin to acknowledge is in the
//!   store as an unacknowledged fire, or its timer is still at or before that occurrence
//!   (its points from there on are delivered again);
//! - an acknowledged fire is never in the store again, and never delivered again;
//! - an unacknowledged fire in the store at a kill is delivered again by the next child with
//!   its token, or is still in the store at the next kill (that child died before it ran).

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use timerwheel_core::durable::{Ack, Durable, DurableTimer, Mode, Sink, SqliteSink, Token};
use timerwheel_core::Runtime;

const THREADS: u64 = 4;
const KEYS_PER_THREAD: u64 = 40;
const CHILD_ENV: &str = "TW_DURABLE_KILL_CHILD";
const MODE_ENV: &str = "TW_DURABLE_KILL_MODE";
/// Async mode's delay: the longest an event waits for its commit.
const ASYNC_DELAY_MS: u64 = 20;
/// What a commit may take beyond the delay on a loaded machine (an fsync on a shared
/// disk took over 400 ms in CI).
const MARGIN_MS: i64 = 1000;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn from_ms(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms as u64)
}

/// A small xorshift generator: the child needs no more.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// Appends one line with one write (atomic with O_APPEND for a short line).
fn note(record: &Mutex<File>, line: String) {
    let _ = record.lock().unwrap().write_all(line.as_bytes());
}

/// The journal's mode for `name` ("sync" or "async").
fn mode(name: &str) -> Mode {
    match name {
        "async" => Mode::Async {
            batch: 1000,
            delay: Duration::from_millis(ASYNC_DELAY_MS),
        },
        _ => Mode::Sync { batch: 1000 },
    }
}

/// How long before a kill a change may have returned and still be lost in `mode`.
fn window_ms(mode: Mode) -> i64 {
    match mode {
        Mode::Async { delay, .. } => delay.as_millis() as i64 + MARGIN_MS,
        Mode::Sync { .. } => 0,
    }
}

/// The child: runs until killed.
fn child(store: &Path, record: &Path, mode: Mode) {
    let record = Arc::new(Mutex::new(
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(record)
            .unwrap(),
    ));
    let fired: Arc<Mutex<Vec<Token>>> = Arc::default();
    let (log, queue) = (Arc::clone(&record), Arc::clone(&fired));
    let runtime = Arc::new(Runtime::builder().max_workers(2).build().unwrap());
    let durable = Durable::builder()
        .handler("charge", move |f| {
            let t = f.token;
            note(
                &log,
                format!("F {} {} {}\n", t.key, t.occurrence_ms, t.epoch),
            );
            queue.lock().unwrap().push(t.clone());
            Ack::Later
        })
        .mode(mode)
        .open_sqlite(runtime, store)
        .unwrap();
    let durable = Arc::new(durable);
    let acker = {
        let (durable, record) = (Arc::clone(&durable), Arc::clone(&record));
        thread::spawn(move || loop {
            thread::sleep(Duration::from_millis(3));
            let tokens = std::mem::take(&mut *fired.lock().unwrap());
            for t in &tokens {
                note(
                    &record,
                    format!("P {} {} {}\n", t.key, t.occurrence_ms, t.epoch),
                );
            }
            if durable.ack(&tokens).is_ok() {
                for t in tokens {
                    note(
                        &record,
                        format!("A {} {} {} {}\n", t.key, t.occurrence_ms, t.epoch, now_ms()),
                    );
                }
            }
        })
    };
    let seed = u64::from(std::process::id()) ^ now_ms() as u64;
    let workers: Vec<_> = (0..THREADS)
        .map(|tid| {
            let (durable, record) = (Arc::clone(&durable), Arc::clone(&record));
            thread::spawn(move || change_loop(tid, &durable, &record, Rng((seed + tid * 7919) | 1)))
        })
        .collect();
    for worker in workers {
        let _ = worker.join();
    }
    let _ = acker.join();
}

fn change_loop(
    tid: u64,
    durable: &Durable<timerwheel_core::BoxTask>,
    record: &Mutex<File>,
    mut rng: Rng,
) {
    loop {
        let key = tid * 1000 + rng.next(KEYS_PER_THREAD);
        let deadline = now_ms() + rng.next(40) as i64;
        let (op, period) = match rng.next(10) {
            0..=3 => ("add", 0),
            4 => ("add", 10 + rng.next(20)),
            5..=7 => ("reset", 0),
            _ => ("delete", 0),
        };
        note(record, format!("B {op} {key} {deadline} {period}\n"));
        let result = match op {
            "add" => durable.add(&DurableTimer {
                key,
                name: "charge",
                payload: b"",
                first: from_ms(deadline),
                period: (period > 0).then(|| Duration::from_millis(period)),
                replace: true,
            }),
            "reset" => durable.reset(key, "charge", from_ms(deadline)),
            _ => durable.delete(key, "charge"),
        };
        let ok = u8::from(result.is_ok());
        let done = now_ms();
        note(
            record,
            format!("D {op} {key} {deadline} {period} {ok} {done}\n"),
        );
    }
}

/// The last completed change of a key, with nothing under way after it.
#[derive(Clone, Copy)]
struct Last {
    op: &'static str,
    deadline: i64,
    periodic: bool,
    ok: bool,
}

#[derive(Default)]
struct Record {
    last: HashMap<u64, Option<Last>>,
    periodic: HashMap<u64, bool>,
    fired: Vec<(u64, i64, u64)>,
    /// Fires seen while a change of their key was under way that never returned (its
    /// add may be lost with the kill, and the fire with it).
    unconfirmed: HashSet<(u64, i64, u64)>,
    acked: HashSet<(u64, i64, u64)>,
    /// Acknowledgements begun (the kill may have come before or after their commit).
    acking: HashSet<(u64, i64, u64)>,
    /// Fires delivered after their acknowledgement: must stay empty.
    after_ack: Vec<(u64, i64, u64)>,
    /// The fires each child saw, one set per child, in order.
    lives: Vec<HashSet<(u64, i64, u64)>>,
}

/// The record at `path`; a change or acknowledgement that returned within `window_ms` of
/// the kill that followed it counts as never returned.
fn read_record(path: &Path, window_ms: i64) -> Record {
    let text = fs::read_to_string(path).unwrap_or_default();
    let kills: Vec<i64> = text
        .lines()
        .filter_map(|line| line.strip_prefix("K ")?.parse().ok())
        .collect();
    let mut lives = kills.iter().map(|&kill| kill - window_ms);
    let mut at_risk_after = lives.next().unwrap_or(i64::MAX);
    let at_risk = |done: &str, after: i64| done.parse::<i64>().is_ok_and(|t| t > after);
    let mut record = Record {
        lives: vec![HashSet::new()],
        ..Record::default()
    };
    let mut under_way: HashMap<u64, Vec<(u64, i64, u64)>> = HashMap::new();
    // Fires not yet taken for acknowledgement when the child was killed, by key.
    let mut at_kill: HashMap<u64, Vec<(u64, i64, u64)>> = HashMap::new();
    let mut this_life: HashSet<(u64, i64, u64)> = HashSet::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["B", _, key, ..] => {
                let key = key.parse().unwrap();
                record.last.insert(key, None);
                // A change left under way by an earlier kill never returned.
                record
                    .unconfirmed
                    .extend(under_way.remove(&key).unwrap_or_default());
                // A change after a restart supersedes a fire whose record the kill lost.
                record
                    .unconfirmed
                    .extend(at_kill.remove(&key).unwrap_or_default());
                under_way.insert(key, Vec::new());
            }
            ["D", .., done] if at_risk(done, at_risk_after) => {}
            ["D", op, key, deadline, period, ok, _] => {
                let key: u64 = key.parse().unwrap();
                under_way.remove(&key);
                let op = match *op {
                    "add" => "add",
                    "reset" => "reset",
                    _ => "delete",
                };
                let ok = *ok == "1";
                if op == "add" && ok {
                    record.periodic.insert(key, *period != "0");
                }
                let periodic = record.periodic.get(&key).copied().unwrap_or(false);
                let deadline = deadline.parse().unwrap();
                record.last.insert(
                    key,
                    Some(Last {
                        op,
                        deadline,
                        periodic,
                        ok,
                    }),
                );
            }
            ["F", key, occ, epoch] => {
                let token = (
                    key.parse().unwrap(),
                    occ.parse().unwrap(),
                    epoch.parse().unwrap(),
                );
                if record.acked.contains(&token) {
                    record.after_ack.push(token);
                }
                if let Some(fires) = under_way.get_mut(&token.0) {
                    fires.push(token);
                }
                this_life.insert(token);
                record.lives.last_mut().unwrap().insert(token);
                record.fired.push(token);
            }
            ["P", key, occ, epoch] => {
                let token = (
                    key.parse().unwrap(),
                    occ.parse().unwrap(),
                    epoch.parse().unwrap(),
                );
                this_life.remove(&token);
                record.acking.insert(token);
            }
            ["K", _] => {
                at_risk_after = lives.next().unwrap_or(i64::MAX);
                record.lives.push(HashSet::new());
                for token in this_life.drain() {
                    at_kill.entry(token.0).or_default().push(token);
                }
            }
            ["A", .., done] if at_risk(done, at_risk_after) => {}
            ["A", key, occ, epoch, _] => {
                record.acked.insert((
                    key.parse().unwrap(),
                    occ.parse().unwrap(),
                    epoch.parse().unwrap(),
                ));
            }
            _ => {} // the line the kill cut short
        }
    }
    record.unconfirmed.extend(under_way.into_values().flatten());
    record
}

fn check(store: &Path, record: &Record) -> Vec<String> {
    let snapshot = SqliteSink::open(store).unwrap().load().unwrap();
    let timer = |key: u64| snapshot.timers.get(&(key, "charge".to_owned()));
    let fire_in_store = |key: u64, occ: i64| {
        snapshot
            .fires
            .keys()
            .any(|t| t.key == key && t.occurrence_ms == occ)
    };
    let fired_there = |key: u64| {
        timer(key).is_some_and(|t| {
            let token = (key, t.deadline_ms, t.epoch);
            record.fired.contains(&token)
        })
    };
    let mut errors = Vec::new();
    for (&key, last) in &record.last {
        let Some(last) = last else { continue };
        let present = timer(key).is_some();
        match (last.op, last.ok) {
            ("delete", true) if present => errors.push(format!(
                "key {key}: delete returned, the timer is in the store"
            )),
            // Not found: the timer had ended, by a fire whose journal entry the kill may
            // have lost (the store then still holds it, at that fire's occurrence).
            ("delete" | "reset", false) if present && !fired_there(key) => errors.push(format!(
                "key {key}: {} found nothing, the timer is in the store",
                last.op
            )),
            ("add" | "reset", true) if last.periodic && !present => errors.push(format!(
                "key {key}: periodic after {} returned, not in the store",
                last.op
            )),
            ("add" | "reset", true) if !last.periodic => {
                let at_deadline = timer(key).is_some_and(|t| t.deadline_ms == last.deadline);
                let fired = fire_in_store(key, last.deadline)
                    || record
                        .acking
                        .iter()
                        .any(|&(k, occ, _)| k == key && occ == last.deadline);
                if !at_deadline && !fired {
                    errors.push(format!(
                        "key {key}: one-shot {} for {} lost",
                        last.op, last.deadline
                    ));
                }
            }
            _ => {}
        }
    }
    for &(key, occ, epoch) in &record.fired {
        let acked = record.acked.contains(&(key, occ, epoch));
        let token = Token {
            key,
            name: "charge".to_owned(),
            occurrence_ms: occ,
            epoch,
        };
        let in_store = snapshot.fires.contains_key(&token);
        if acked && in_store {
            errors.push(format!(
                "fire {key}@{occ}#{epoch} acknowledged, still in the store"
            ));
        }
        let waits = timer(key).is_some_and(|t| t.epoch == epoch && t.deadline_ms <= occ);
        let acking = record.acking.contains(&(key, occ, epoch));
        // A timer may fire before its add is committed: lost with the add if the kill came
        // before the add returned.
        let unconfirmed = record.unconfirmed.contains(&(key, occ, epoch));
        if !acking && !in_store && !waits && !unconfirmed {
            errors.push(format!(
                "fire {key}@{occ}#{epoch} lost: not acknowledged, not in the store"
            ));
        }
    }
    for token in &record.after_ack {
        errors.push(format!(
            "fire {token:?} delivered again after its acknowledgement"
        ));
    }
    errors
}

/// Checks that every fire in `pending` (unacknowledged in the store at the kill before)
/// was delivered again, with its token, by the child of `kill`, or is still in the store;
/// returns how many were, and the unacknowledged fires in the store now.
fn check_redelivery(
    store: &Path,
    record: &Record,
    kill: u32,
    pending: &[Token],
    errors: &mut Vec<String>,
) -> (usize, Vec<Token>) {
    let fires = SqliteSink::open(store).unwrap().load().unwrap().fires;
    let life = &record.lives[kill as usize];
    let mut back = 0;
    for t in pending {
        if life.contains(&(t.key, t.occurrence_ms, t.epoch)) {
            back += 1;
        } else if !fires.contains_key(t) {
            errors.push(format!(
                "fire {}@{}#{} unacknowledged at the kill before, neither delivered again nor in the store",
                t.key, t.occurrence_ms, t.epoch
            ));
        }
    }
    (back, fires.into_keys().collect())
}

#[test]
fn kill_child_entry() {
    if let (Ok(store), Ok(record)) = (
        std::env::var(CHILD_ENV),
        std::env::var("TW_DURABLE_KILL_RECORD"),
    ) {
        let mode = mode(&std::env::var(MODE_ENV).unwrap_or_default());
        child(Path::new(&store), Path::new(&record), mode);
    }
}

#[test]
fn sync_changes_and_fires_survive_sigkill() {
    survive_sigkills("sync");
}

#[test]
fn async_changes_older_than_the_window_and_fires_survive_sigkill() {
    survive_sigkills("async");
}

/// `TW_KILLS` children in `mode_name` mode, each killed at a random moment and checked.
fn survive_sigkills(mode_name: &str) {
    // One mode at a time: the other's fsyncs would slow this one's commits.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let kills: u32 = std::env::var("TW_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let window = window_ms(mode(mode_name));
    let dir = std::env::temp_dir().join(format!(
        "tw-durable-kill-{mode_name}-{}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let (store, record): (PathBuf, PathBuf) = (dir.join("t.db"), dir.join("record"));
    let mut rng = Rng(u64::from(std::process::id()) | 1);
    // Unacknowledged fires in the store at the last kill, and how many came back.
    let mut pending: Vec<Token> = Vec::new();
    let mut redelivered = 0;
    for kill in 0..kills {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "kill_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &store)
            .env("TW_DURABLE_KILL_RECORD", &record)
            .env(MODE_ENV, mode_name)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // Long enough in async mode for changes older than the window.
        thread::sleep(Duration::from_millis(150 + window as u64 + rng.next(400)));
        let killed_at = now_ms();
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            status.code().is_none(),
            "kill {kill}: the child ended by itself: {status:?}"
        );
        OpenOptions::new()
            .append(true)
            .open(&record)
            .unwrap()
            .write_all(format!("\nK {killed_at}\n").as_bytes())
            .unwrap();
        let record_now = read_record(&record, window);
        let mut errors = check(&store, &record_now);
        let (back, unacked) = check_redelivery(&store, &record_now, kill, &pending, &mut errors);
        redelivered += back;
        pending = unacked;
        assert!(
            errors.is_empty(),
            "{mode_name}: after kill {kill} (kept in {}): {errors:#?}",
            dir.display()
        );
    }
    let record = read_record(&record, window);
    assert!(
        !record.fired.is_empty() && !record.acked.is_empty(),
        "nothing fired"
    );
    assert!(kills < 3 || redelivered > 0, "no fire was delivered again");
    let _ = fs::remove_dir_all(&dir);
}
