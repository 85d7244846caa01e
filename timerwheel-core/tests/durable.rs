//! Durable timers (docs/durable.md): restore after the store's owner went away, tokens,
//! acknowledgements, the missed-points policy, and the stores that must be refused.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use timerwheel_core::durable::{
    Ack, Change, Durable, DurableBuilder, DurableError, DurableTimer, Event, MemorySink,
    MissedPoints, Mode, Snapshot, StoredTimer, Token, SCHEMA_VERSION,
};
use timerwheel_core::Runtime;

type Seen = Arc<Mutex<Vec<(Token, Vec<u8>)>>>;

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn wheel_at(at: SystemTime) -> Arc<Runtime> {
    Arc::new(Runtime::builder().virtual_clock(at).build().unwrap())
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A builder with a handler "charge" that records its fires and answers `ack`.
fn recording(ack: Ack) -> (DurableBuilder, Seen) {
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let builder = Durable::builder().handler("charge", move |fired| {
        log.lock()
            .unwrap()
            .push((fired.token.clone(), fired.payload.to_vec()));
        ack
    });
    (builder, seen)
}

fn timer<'a>(key: u64, payload: &'a [u8], first: SystemTime) -> DurableTimer<'a> {
    DurableTimer {
        key,
        name: "charge",
        payload,
        first,
        period: None,
        replace: false,
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("tw-durable-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o755));
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn tokens(seen: &Seen) -> Vec<Token> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(t, _)| t.clone())
        .collect()
}

#[test]
fn a_fire_carries_its_token_and_payload_and_an_ack_removes_it() {
    let dir = TempDir::new("ack");
    let path = dir.file("t.db");
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Later);
    let store = builder.open_sqlite(Arc::clone(&wheel), &path).unwrap();
    store
        .add(&timer(42, b"cents=5", start() + ms(100)))
        .unwrap();
    wheel.advance(ms(99)).unwrap();
    assert!(seen.lock().unwrap().is_empty(), "never early");
    wheel.advance(ms(1)).unwrap();
    let fired = seen.lock().unwrap().clone();
    assert_eq!(fired.len(), 1);
    let (token, payload) = &fired[0];
    assert_eq!((token.key, token.name.as_str()), (42, "charge"));
    assert_eq!(token.occurrence_ms, 1_700_000_000_100);
    assert_eq!(payload, b"cents=5");
    assert_eq!(store.stats().unwrap().unacked_fires, 1);
    assert_eq!(store.ack(std::slice::from_ref(token)).unwrap(), 1);
    assert_eq!(
        store.ack(std::slice::from_ref(token)).unwrap(),
        0,
        "acked once"
    );
    store.flush().unwrap();
    drop(store);
    let (builder, seen) = recording(Ack::Later);
    let store = builder
        .open_sqlite(wheel_at(start() + ms(200)), &path)
        .unwrap();
    assert_eq!(
        store.stats().unwrap().timers + store.stats().unwrap().unacked_fires,
        0
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn an_unacknowledged_fire_is_delivered_again_with_its_token_after_reopen() {
    let dir = TempDir::new("redeliver");
    let path = dir.file("t.db");
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Later);
    let store = builder.open_sqlite(Arc::clone(&wheel), &path).unwrap();
    store.add(&timer(7, b"p", start() + ms(10))).unwrap();
    wheel.advance(ms(10)).unwrap();
    let first = tokens(&seen);
    store.flush().unwrap();
    drop(store);

    let later = wheel_at(start() + ms(5000));
    let (builder, seen) = recording(Ack::Later);
    let store = builder.open_sqlite(Arc::clone(&later), &path).unwrap();
    later.advance(ms(0)).unwrap();
    assert_eq!(tokens(&seen), first, "the same token, once");
    assert_eq!(store.stats().unwrap().redelivered, 1);
    assert_eq!(store.ack(&first).unwrap(), 1);
}

#[test]
fn a_periodic_timer_delivers_every_missed_point_or_coalesces_them() {
    for (missed, expected) in [(MissedPoints::Each, 5), (MissedPoints::Coalesce, 1)] {
        let dir = TempDir::new("missed");
        let path = dir.file("t.db");
        let wheel = wheel_at(start());
        let (builder, _) = recording(Ack::Now);
        let store = builder.open_sqlite(Arc::clone(&wheel), &path).unwrap();
        let mut periodic = timer(1, b"", start() + ms(100));
        periodic.period = Some(ms(100));
        store.add(&periodic).unwrap();
        wheel.advance(ms(100)).unwrap();
        store.flush().unwrap();
        drop(store);

        // Down from 100 ms to 650 ms: the points 200..600 passed.
        let later = wheel_at(start() + ms(650));
        let (builder, seen) = recording(Ack::Now);
        let store = builder
            .missed(missed)
            .open_sqlite(Arc::clone(&later), &path)
            .unwrap();
        later.advance(ms(0)).unwrap();
        let occurrences: Vec<i64> = tokens(&seen)
            .iter()
            .map(|t| t.occurrence_ms % 1000)
            .collect();
        assert_eq!(occurrences.len(), expected, "{missed:?}: {occurrences:?}");
        assert_eq!(*occurrences.last().unwrap(), 600);
        later.advance(ms(50)).unwrap();
        assert_eq!(tokens(&seen).last().unwrap().occurrence_ms % 1000, 700);
        drop(store);
    }
}

#[test]
fn add_reset_delete_refuse_what_they_must_and_change_nothing() {
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Now);
    let sink = MemorySink::new();
    let store = builder.open(Arc::clone(&wheel), sink.clone()).unwrap();
    store.add(&timer(1, b"a", start() + ms(10))).unwrap();
    assert_eq!(
        store.add(&timer(1, b"b", start() + ms(5))),
        Err(DurableError::Exists)
    );
    let mut other = timer(1, b"", start());
    other.name = "nobody";
    assert_eq!(
        store.add(&other),
        Err(DurableError::NoHandler("nobody".into()))
    );
    assert_eq!(
        store.reset(2, "charge", start()),
        Err(DurableError::NotFound)
    );
    assert_eq!(store.delete(2, "charge"), Err(DurableError::NotFound));
    wheel.advance(ms(10)).unwrap();
    assert_eq!(
        seen.lock().unwrap()[0].1,
        b"a",
        "the refused add changed nothing"
    );

    let mut replacing = timer(3, b"old", start() + ms(20));
    store.add(&replacing).unwrap();
    replacing.payload = b"new";
    replacing.replace = true;
    store.add(&replacing).unwrap();
    store.reset(3, "charge", start() + ms(30)).unwrap();
    wheel.advance(ms(15)).unwrap();
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the reset moved it past 20 ms"
    );
    wheel.advance(ms(10)).unwrap();
    let fired = seen.lock().unwrap().clone();
    assert_eq!((fired.len(), fired[1].1.as_slice()), (2, &b"new"[..]));
    assert!(
        fired[1].0.epoch > fired[0].0.epoch,
        "a replaced timer has a new epoch"
    );
    store.add(&timer(4, b"", start() + ms(50))).unwrap();
    store.delete(4, "charge").unwrap();
    wheel.advance(ms(100)).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2, "a deleted timer never fires");
    store.flush().unwrap();
    let snapshot = sink.snapshot();
    assert!(
        snapshot.timers.is_empty() && snapshot.fires.is_empty(),
        "{snapshot:?}"
    );
}

#[test]
fn an_open_whose_second_step_is_dropped_schedules_the_stored_timers_and_takes_calls() {
    let dir = TempDir::new("unrestored");
    let path = dir.file("t.db");
    store_one_timer(&path, 4, start() + ms(10));
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Now);
    let sink = timerwheel_core::durable::SqliteSink::open(&path).unwrap();
    let (store, restoring) = builder
        .open_unrestored(Box::new(Arc::clone(&wheel)), Box::new(sink))
        .unwrap();
    drop(restoring);
    let store = Arc::new(store);
    let (done, waited) = std::sync::mpsc::channel();
    let adder = Arc::clone(&store);
    // A thread of its own: on a hang the test fails instead of hanging too.
    std::thread::spawn(move || done.send(adder.add(&timer(5, b"", start() + ms(20)))));
    let added = waited.recv_timeout(Duration::from_secs(30));
    assert!(
        matches!(added, Ok(Ok(()))),
        "the add waited for a restore: {added:?}"
    );
    wheel.advance(ms(20)).unwrap();
    let keys: Vec<u64> = tokens(&seen).iter().map(|t| t.key).collect();
    assert_eq!(keys, [4, 5], "the stored timer was scheduled");
}

#[test]
fn a_periodic_timer_added_or_reset_far_in_the_past_owes_only_its_latest_point() {
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Now);
    let store = builder.open(Arc::clone(&wheel), MemorySink::new()).unwrap();
    // 100 s before now, every 10 ms: ten thousand points passed before the add.
    let mut periodic = timer(1, b"", start() - Duration::from_secs(100) + ms(3));
    periodic.period = Some(ms(10));
    store.add(&periodic).unwrap();
    wheel.advance(ms(0)).unwrap();
    let due = |seen: &Seen| -> Vec<i64> {
        tokens(seen)
            .iter()
            .map(|t| t.occurrence_ms % 100_000)
            .collect()
    };
    assert_eq!(
        due(&seen),
        [99_993],
        "the latest point that passed, at once"
    );
    wheel.advance(ms(10)).unwrap();
    assert_eq!(due(&seen), [99_993, 3], "then on its schedule");
    store.reset(1, "charge", UNIX_EPOCH).unwrap(); // 1970: every point passed since
    wheel.advance(ms(0)).unwrap();
    assert_eq!(tokens(&seen).len(), 3, "{:?}", due(&seen));
}

#[test]
fn a_batch_of_no_events_is_refused() {
    for mode in [
        Mode::Sync { batch: 0 },
        Mode::Async {
            batch: 0,
            delay: ms(1),
        },
    ] {
        let (builder, _) = recording(Ack::Now);
        let opened = builder
            .mode(mode)
            .open(wheel_at(start()), MemorySink::default());
        assert!(
            matches!(&opened, Err(DurableError::Invalid(m)) if m.contains("batch")),
            "{mode:?}"
        );
    }
}

#[test]
fn sync_mode_returns_once_the_change_is_in_the_store() {
    let sink = MemorySink::new();
    let (builder, _) = recording(Ack::Now);
    let store = builder
        .mode(Mode::Sync { batch: 100 })
        .open(wheel_at(start()), sink.clone())
        .unwrap();
    for key in 0..50 {
        store.add(&timer(key, b"", start() + ms(1000))).unwrap();
        assert!(sink
            .snapshot()
            .timers
            .contains_key(&(key, "charge".to_owned())));
    }
}

#[test]
fn a_failed_commit_is_reported_once_counted_and_retried() {
    let sink = MemorySink::new();
    let (builder, _) = recording(Ack::Now);
    let store = builder.open(wheel_at(start()), sink.clone()).unwrap();
    sink.set_failing(true);
    store.add(&timer(1, b"", start() + ms(1000))).unwrap();
    assert!(matches!(store.flush(), Err(DurableError::Store(_))));
    assert!(store.stats().unwrap().sink_failures >= 1);
    sink.set_failing(false);
    store.flush().unwrap();
    assert!(
        sink.snapshot()
            .timers
            .contains_key(&(1, "charge".to_owned())),
        "retried"
    );
}

#[test]
fn replaying_twice_is_replaying_once() {
    let add = |seq, key| Event {
        seq,
        change: Change::Add(StoredTimer {
            key,
            name: "charge".into(),
            payload: vec![],
            deadline_ms: 5,
            period_ms: 0,
            epoch: seq,
        }),
    };
    let events = [
        add(1, 1),
        add(2, 2),
        Event {
            seq: 3,
            change: Change::Delete {
                key: 1,
                name: "charge".into(),
            },
        },
    ];
    let mut once = Snapshot::default();
    events.iter().for_each(|e| {
        once.apply(e);
    });
    let mut twice = once.clone();
    events.iter().for_each(|e| assert!(!twice.apply(e)));
    assert_eq!(once, twice);
    assert_eq!(once.timers.len(), 1);
}

fn refused(path: &Path) -> String {
    let (builder, _) = recording(Ack::Now);
    match builder.open_sqlite(wheel_at(start()), path) {
        Err(DurableError::Store(message)) => message,
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("{} was opened", path.display()),
    }
}

#[test]
fn a_store_left_blank_by_a_crash_while_it_was_created_is_made_anew() {
    // A crash (kill -9) while the first open created the store leaves no bytes, or a
    // database in WAL mode with no table and no marks; either was refused for good before.
    let dir = TempDir::new("blank");
    let empty = dir.file("empty.db");
    fs::write(&empty, b"").unwrap();
    let switched = dir.file("switched.db");
    {
        let conn = rusqlite::Connection::open(&switched).unwrap();
        let _: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .unwrap();
    }
    for path in [empty, switched] {
        {
            let (builder, _) = recording(Ack::Now);
            let store = builder.open_sqlite(wheel_at(start()), &path).unwrap();
            store.add(&timer(1, b"kept", start() + ms(60_000))).unwrap();
            store.flush().unwrap();
        }
        let (builder, _) = recording(Ack::Now);
        let store = builder.open_sqlite(wheel_at(start()), &path).unwrap();
        let again = store.add(&timer(1, b"kept", start() + ms(60_000)));
        assert!(matches!(again, Err(DurableError::Exists)), "{again:?}");
    }
}

#[test]
fn a_file_of_one_byte_is_refused_and_left_untouched() {
    // SQLite reads a file shorter than a page as an empty database: a file of one byte was
    // taken as blank and made a store, its byte lost.
    let dir = TempDir::new("one-byte");
    let small = dir.file("small.db");
    fs::write(&small, b"\n").unwrap();
    assert!(refused(&small).contains("not a timerwheel store"));
    assert_eq!(fs::read(&small).unwrap(), b"\n");
}

/// Makes the store at `path` hold one timer, `key`, due at `when`.
fn store_one_timer(path: &Path, key: u64, when: SystemTime) {
    let (builder, _) = recording(Ack::Now);
    let store = builder.open_sqlite(wheel_at(start()), path).unwrap();
    store.add(&timer(key, b"kept", when)).unwrap();
    store.flush().unwrap();
}

#[test]
fn a_store_cut_inside_its_last_page_is_refused_and_left_untouched() {
    // SQLite reads the missing bytes of a cut last page as zeros; quick_check passed and
    // the store opened with its sequence number read back as 0.
    let dir = TempDir::new("cut");
    let path = dir.file("cut.db");
    store_one_timer(&path, 1, start() + ms(60_000));
    let mut bytes = fs::read(&path).unwrap();
    bytes.pop();
    fs::write(&path, &bytes).unwrap();
    assert!(refused(&path).contains("truncated"));
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn bad_files_are_refused_and_left_untouched() {
    let dir = TempDir::new("bad");
    let garbage = dir.file("garbage.db");
    fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    assert!(refused(&garbage).contains("not a sound SQLite store"));
    assert_eq!(fs::read(&garbage).unwrap(), vec![0x5a; 8192]);

    let good = dir.file("good.db");
    {
        let (builder, _) = recording(Ack::Now);
        let store = builder.open_sqlite(wheel_at(start()), &good).unwrap();
        for key in 0..2000 {
            store
                .add(&timer(key, &[7; 64], start() + ms(1_000_000)))
                .unwrap();
        }
        store.flush().unwrap();
    }
    let bytes = fs::read(&good).unwrap();
    let truncated = dir.file("truncated.db");
    fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let message = refused(&truncated);
    assert!(
        message.contains("damaged") || message.contains("not a sound"),
        "{message}"
    );
    assert_eq!(fs::read(&truncated).unwrap(), &bytes[..bytes.len() / 2]);

    let foreign = dir.file("foreign.db");
    let mut other = bytes.clone();
    let newer = SCHEMA_VERSION + 1;
    other[60..64].copy_from_slice(&newer.to_be_bytes()); // user_version: a later library's
    fs::write(&foreign, &other).unwrap();
    assert!(refused(&foreign).contains(&format!("schema version {newer}")));
    assert_eq!(fs::read(&foreign).unwrap(), other);
    other[60..64].copy_from_slice(&SCHEMA_VERSION.to_be_bytes());
    other[68..72].copy_from_slice(&0i32.to_be_bytes()); // another application's database
    fs::write(&foreign, &other).unwrap();
    assert!(refused(&foreign).contains("not a timerwheel store"));
    assert_eq!(fs::read(&foreign).unwrap(), other);

    assert!(refused(&dir.file("missing-dir/t.db")).contains("missing-dir"));
}

/// Runs `chattr flag path`: root, whom permissions do not stop, cannot write an immutable
/// file either. `false` where the filesystem has no such attribute.
fn chattr(flag: &str, path: &Path) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_store_that_cannot_be_written_is_refused_as_read_only_and_left_untouched() {
    let dir = TempDir::new("immutable");
    let path = dir.file("t.db");
    store_one_timer(&path, 3, start() + ms(10));
    let before = fs::read(&path).unwrap();
    if !chattr("+i", &path) {
        eprintln!("skipped: chattr +i is not supported here");
        return;
    }
    let message = refused(&path);
    chattr("-i", &path);
    assert!(message.contains("read-only"), "{message}");
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn a_stored_timer_without_its_handler_fails_the_open_and_stays() {
    let dir = TempDir::new("handler");
    let path = dir.file("t.db");
    store_one_timer(&path, 9, start() + ms(10));
    let other = Durable::builder().handler("idle", |_| Ack::Now);
    match other.open_sqlite(wheel_at(start()), &path) {
        Err(DurableError::NoHandler(name)) => assert_eq!(name, "charge"),
        other => panic!("{:?}", other.err()),
    }
    let (builder, seen) = recording(Ack::Now);
    let wheel = wheel_at(start());
    let _store = builder.open_sqlite(Arc::clone(&wheel), &path).unwrap();
    wheel.advance(ms(10)).unwrap();
    assert_eq!(tokens(&seen)[0].key, 9, "the timer stayed in the store");
}

/// `refused(path)`, checked to come at once: SQLite's busy wait (5 s) made it slow.
fn refused_at_once(path: &Path) -> String {
    let began = std::time::Instant::now();
    let message = refused(path);
    let took = began.elapsed();
    assert!(took < Duration::from_secs(2), "refused after {took:?}");
    message
}

#[test]
fn a_second_opener_is_refused_at_once_and_the_file_is_private() {
    let dir = TempDir::new("lock");
    let path = dir.file("t.db");
    let (builder, _) = recording(Ack::Now);
    let store = builder.open_sqlite(wheel_at(start()), &path).unwrap();
    assert!(refused_at_once(&path).contains("locked by another opener"));
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    drop(store);
    let (builder, _) = recording(Ack::Now);
    builder.open_sqlite(wheel_at(start()), &path).unwrap();
}

const HOLDER_ENV: &str = "TW_DURABLE_HOLDER_STORE";

/// The other process of the test below: opens the store, says so, and holds it until killed.
#[test]
fn holder_child_entry() {
    if let Ok(path) = std::env::var(HOLDER_ENV) {
        let (builder, _) = recording(Ack::Now);
        let _store = builder.open_sqlite(wheel_at(start()), &path).unwrap();
        println!("open");
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn a_store_another_process_holds_is_refused_at_once() {
    use std::io::{BufRead, BufReader};
    let dir = TempDir::new("lock-process");
    let path = dir.file("t.db");
    let mut holder = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "holder_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLDER_ENV, &path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    assert!(lines.any(|line| line.is_ok_and(|l| l.contains("open"))));
    let message = refused_at_once(&path);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(message.contains("locked by another opener"), "{message}");
    let (builder, _) = recording(Ack::Now);
    builder.open_sqlite(wheel_at(start()), &path).unwrap(); // the lock died with it
}

#[test]
fn fires_of_two_incarnations_at_the_same_instant_are_both_kept() {
    let dir = TempDir::new("incarnations");
    let path = dir.file("t.db");
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Later);
    let store = builder.open_sqlite(Arc::clone(&wheel), &path).unwrap();
    let mut first = timer(5, b"old", start());
    store.add(&first).unwrap();
    wheel.advance(ms(0)).unwrap();
    first.payload = b"new";
    first.replace = true;
    store.add(&first).unwrap(); // due at the same ms as the fire of the first
    wheel.advance(ms(0)).unwrap();
    let fired = tokens(&seen);
    assert_eq!(fired.len(), 2);
    assert_eq!(fired[0].occurrence_ms, fired[1].occurrence_ms);
    assert_eq!(store.stats().unwrap().unacked_fires, 2);
    store.flush().unwrap();
    drop(store);

    let (builder, seen) = recording(Ack::Later);
    let later = wheel_at(start() + ms(10));
    let _store = builder.open_sqlite(Arc::clone(&later), &path).unwrap();
    later.advance(ms(0)).unwrap();
    let mut again = tokens(&seen);
    again.sort();
    let mut expected = fired;
    expected.sort();
    assert_eq!(again, expected, "neither fire overwrote the other");
}

#[test]
fn a_periodic_timer_reset_back_to_a_point_it_fired_at_fires_again_with_a_new_token() {
    let dir = TempDir::new("reset-back");
    let path = dir.file("t.db");
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Later);
    let store = builder.open_sqlite(Arc::clone(&wheel), &path).unwrap();
    let mut periodic = timer(9, b"", start() + ms(10));
    periodic.period = Some(ms(100));
    store.add(&periodic).unwrap();
    wheel.advance(ms(10)).unwrap();
    let first = tokens(&seen);
    assert_eq!(store.ack(&first).unwrap(), 1);
    // Back to the point it fired at: a new fire, which the acknowledgement of the first
    // must not swallow (the ledger would drop it as a duplicate).
    store.reset(9, "charge", start() + ms(10)).unwrap();
    wheel.advance(ms(0)).unwrap();
    let fired = tokens(&seen);
    assert_eq!(fired.len(), 2, "{fired:?}");
    assert_eq!(fired[0].occurrence_ms, fired[1].occurrence_ms);
    assert_ne!(fired[0], fired[1], "two fires, two tokens");
    assert_eq!(store.stats().unwrap().unacked_fires, 1);
    store.flush().unwrap();
    drop(store);

    let (builder, seen) = recording(Ack::Later);
    let later = wheel_at(start() + ms(20));
    let _store = builder.open_sqlite(Arc::clone(&later), &path).unwrap();
    later.advance(ms(0)).unwrap();
    assert_eq!(
        tokens(&seen),
        fired[1..],
        "the second fire's token is the one kept"
    );
}

#[test]
fn a_change_lost_in_a_crash_and_made_again_never_repeats_a_token_its_fires_had() {
    let sink = MemorySink::new();
    let lazy = Mode::Async {
        batch: 1000,
        delay: Duration::from_secs(3600),
    };
    let (builder, seen) = recording(Ack::Later);
    let wheel = wheel_at(start());
    let store = builder
        .mode(lazy)
        .open(Arc::clone(&wheel), sink.clone())
        .unwrap();
    let mut periodic = timer(1, b"", start() + ms(1000));
    periodic.period = Some(ms(10));
    store.add(&periodic).unwrap();
    store.flush().unwrap();
    let on_disk = sink.snapshot(); // the crash comes before the reset is committed
    store.reset(1, "charge", start() + ms(100)).unwrap();
    wheel.advance(ms(100)).unwrap();
    let before_crash = tokens(&seen); // the ledger holds it
    assert_eq!(before_crash.len(), 1);

    let (builder, seen) = recording(Ack::Later);
    let wheel = wheel_at(start() + ms(5));
    let store = builder
        .mode(lazy)
        .open(Arc::clone(&wheel), MemorySink::from(on_disk))
        .unwrap();
    store.reset(1, "charge", start() + ms(90)).unwrap(); // a new schedule
    wheel.advance(ms(95)).unwrap();
    let after = tokens(&seen);
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(after[1].occurrence_ms, before_crash[0].occurrence_ms);
    assert!(
        !after.contains(&before_crash[0]),
        "a new fire took a token of the ledger"
    );
}

/// A store whose every commit takes `pause`, and which records when each commit ended and
/// the last sequence it held.
#[derive(Clone)]
struct SlowSink {
    inner: MemorySink,
    pause: Duration,
    commits: Arc<Mutex<Vec<(u64, std::time::Instant, Duration)>>>,
}

impl timerwheel_core::durable::Sink for SlowSink {
    fn load(&mut self) -> Result<Snapshot, String> {
        self.inner.load()
    }

    fn commit(&mut self, events: &[Event]) -> Result<(), String> {
        let began = std::time::Instant::now();
        std::thread::sleep(self.pause);
        self.inner.commit(events)?;
        let last = events.last().map_or(0, |e| e.seq);
        let ended = std::time::Instant::now();
        self.commits
            .lock()
            .unwrap()
            .push((last, ended, ended - began));
        Ok(())
    }
}

#[test]
fn async_changes_wait_for_a_slow_store_instead_of_piling_up() {
    let delay = ms(10);
    let sink = SlowSink {
        inner: MemorySink::new(),
        pause: ms(50),
        commits: Arc::default(),
    };
    let (builder, _) = recording(Ack::Now);
    let store = builder
        .mode(Mode::Async { batch: 100, delay })
        .open(wheel_at(start()), sink.clone())
        .unwrap();
    // Each add journals one event: the add of key k has sequence k + 1.
    let returned: Vec<std::time::Instant> = (0..3000)
        .map(|key| {
            store.add(&timer(key, b"", start() + ms(60_000))).unwrap();
            std::time::Instant::now()
        })
        .collect();
    store.flush().unwrap();
    let commits = sink.commits.lock().unwrap().clone();
    let longest = commits.iter().map(|c| c.2).max().unwrap();
    let bound = delay + 2 * longest + ms(250);
    for (key, at) in returned.iter().enumerate() {
        let seq = key as u64 + 1;
        let (_, durable_at, _) = commits.iter().find(|c| c.0 >= seq).unwrap();
        let lag = durable_at.saturating_duration_since(*at);
        assert!(
            lag <= bound,
            "the add of key {key} returned {lag:?} before it was committed (bound {bound:?}): \
             a crash then loses more than the last `delay` and the commit under way"
        );
    }
}

#[test]
fn a_change_is_not_held_up_by_fires_that_keep_a_slow_store_busy() {
    // The store commits 8 events per 2 ms; 64 timers due every millisecond ask far more.
    let batch = 8;
    let sink = SlowSink {
        inner: MemorySink::new(),
        pause: ms(2),
        commits: Arc::default(),
    };
    let (builder, _) = recording(Ack::Now);
    let runtime: Arc<Runtime> = Arc::new(Runtime::builder().build().unwrap());
    let store = builder
        .mode(Mode::Async {
            batch,
            delay: ms(1),
        })
        .open(runtime, sink)
        .unwrap();
    let now = SystemTime::now();
    for key in 0..64 {
        let every_ms = DurableTimer {
            period: Some(ms(1)),
            ..timer(key, b"", now + ms(500))
        };
        store.add(&every_ms).unwrap();
    }
    std::thread::sleep(ms(800));
    let store = Arc::new(store);
    let (done, returned) = std::sync::mpsc::channel();
    let adder = Arc::clone(&store);
    std::thread::spawn(move || {
        let _ = done.send(adder.add(&timer(1000, b"", now + ms(3_600_000))));
    });
    let added = returned.recv_timeout(ms(20_000));
    assert!(
        matches!(added, Ok(Ok(()))),
        "an add did not return in 20 s ({added:?}) while the timers' fires kept the store busy"
    );
    let pending = store.stats().unwrap().pending_events();
    assert!(
        pending <= 1000,
        "{pending} events queued: the fires piled up ahead of the store"
    );
}

/// A store whose commits wait while its gate is closed.
#[derive(Clone, Default)]
struct GatedSink {
    inner: MemorySink,
    closed: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl GatedSink {
    fn set_closed(&self, closed: bool) {
        *self.closed.0.lock().unwrap() = closed;
        self.closed.1.notify_all();
    }
}

impl timerwheel_core::durable::Sink for GatedSink {
    fn load(&mut self) -> Result<Snapshot, String> {
        self.inner.load()
    }

    fn commit(&mut self, events: &[Event]) -> Result<(), String> {
        let (closed, opened) = &*self.closed;
        let mut closed = closed.lock().unwrap();
        while *closed {
            closed = opened.wait(closed).unwrap();
        }
        self.inner.commit(events)
    }
}

#[test]
fn a_sync_ack_returns_only_once_every_earlier_ack_is_committed() {
    let sink = GatedSink::default();
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Later);
    let store = Arc::new(
        builder
            .mode(Mode::Sync { batch: 100 })
            .open(Arc::clone(&wheel), sink.clone())
            .unwrap(),
    );
    store.add(&timer(1, b"", start())).unwrap();
    wheel.advance(ms(0)).unwrap();
    store.flush().unwrap();
    let fired = tokens(&seen);
    assert_eq!(fired.len(), 1);
    sink.set_closed(true);
    let ack = |store: &Arc<Durable<timerwheel_core::BoxTask>>| {
        let (store, fired) = (Arc::clone(store), fired.clone());
        std::thread::spawn(move || store.ack(&fired).unwrap())
    };
    let first = ack(&store);
    while store.stats().unwrap().unacked_fires != 0 {
        std::thread::sleep(ms(1));
    }
    // The token is acknowledged in memory, not yet in the store.
    let second = ack(&store);
    std::thread::sleep(ms(200));
    assert!(
        !second.is_finished(),
        "an ack returned while the acknowledgement it found was not committed"
    );
    assert_eq!(sink.inner.snapshot().fires.len(), 1);
    sink.set_closed(false);
    assert_eq!(first.join().unwrap(), 1);
    assert_eq!(second.join().unwrap(), 0);
    assert!(sink.inner.snapshot().fires.is_empty());
}

#[test]
fn every_call_after_the_runtime_shut_down_is_shutdown_and_changes_nothing() {
    let sink = MemorySink::new();
    let wheel = wheel_at(start());
    let (builder, seen) = recording(Ack::Later);
    let store = builder
        .mode(Mode::Sync { batch: 100 })
        .open(Arc::clone(&wheel), sink.clone())
        .unwrap();
    store.add(&timer(1, b"", start())).unwrap();
    store.add(&timer(2, b"", start() + ms(60_000))).unwrap();
    wheel.advance(ms(0)).unwrap();
    let fired = tokens(&seen);
    store.flush().unwrap();
    let before = sink.snapshot();
    assert_eq!((before.timers.len(), before.fires.len()), (1, 1));
    wheel.shutdown_nowait().unwrap();
    let shut = |r: Result<(), DurableError>| {
        assert!(
            matches!(
                r,
                Err(DurableError::Runtime(timerwheel_core::Error::Shutdown))
            ),
            "{r:?}"
        )
    };
    shut(store.delete(2, "charge"));
    shut(store.ack(&fired).map(drop));
    shut(store.add(&timer(2, b"", start())).map(drop));
    shut(store.reset(2, "charge", start()));
    shut(store.flush().map(drop));
    drop(store);
    let after = sink.snapshot();
    assert_eq!(after.timers.len(), before.timers.len());
    assert_eq!(after.fires.len(), before.fires.len());
}

/// A full disk, as `RLIMIT_FSIZE` makes one for this process alone (a read-only directory
/// made by chmod after the open would not do: the store writes through files it opened,
/// and the tests run as root on CI, whom permissions do not stop).
mod full_disk {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};
    use std::time::Instant;

    const STORE_ENV: &str = "TW_DURABLE_FULL_DISK_STORE";
    const CRASH_ENV: &str = "TW_DURABLE_FULL_DISK_CRASH";
    /// The timers made durable before the disk fills.
    const BEFORE: u64 = 10;

    extern "C" {
        fn setrlimit(resource: i32, limits: *const [u64; 2]) -> i32;
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const RLIMIT_FSIZE: i32 = 1;
    const SIGXFSZ: i32 = 25;
    const SIG_IGN: usize = 1;

    /// Limits the files this process writes to `bytes` (`u64::MAX`: no limit).
    fn limit_file_size(bytes: u64) {
        // SAFETY: setrlimit reads two limits (soft, hard; u64::MAX is RLIM_INFINITY).
        assert_eq!(unsafe { setrlimit(RLIMIT_FSIZE, &[bytes, u64::MAX]) }, 0);
    }

    fn far_timer(key: u64, payload: &[u8]) -> DurableTimer<'_> {
        timer(key, payload, SystemTime::now() + Duration::from_secs(3600))
    }

    fn open(path: &Path) -> Durable<timerwheel_core::BoxTask> {
        let runtime = Arc::new(Runtime::builder().build().unwrap());
        let mode = Mode::Async {
            batch: 100,
            delay: ms(5),
        };
        let (builder, _) = recording(Ack::Now);
        builder.mode(mode).open_sqlite(runtime, path).unwrap()
    }

    /// The child: fills the disk under the store, checks the failure is reported, then
    /// (unless told to wait for its kill there) gives the space back and checks that the
    /// commits resume.
    #[test]
    fn full_disk_child_entry() {
        let Ok(path) = std::env::var(STORE_ENV) else {
            return;
        };
        let path = Path::new(&path);
        // SAFETY: with SIGXFSZ ignored, a write past the limit fails with EFBIG instead.
        unsafe { signal(SIGXFSZ, SIG_IGN) };
        let store = open(path);
        let payload = vec![7u8; 4096];
        for key in 0..BEFORE {
            store.add(&far_timer(key, &payload)).unwrap();
        }
        let durable = store.flush().unwrap();
        let wal = path.with_extension("db-wal");
        let used = [path, &wal].map(|p| fs::metadata(p).map_or(0, |m| m.len()));
        limit_file_size(used[0].max(used[1]));
        let mut reported = None;
        for key in BEFORE..5000 {
            match store.add(&far_timer(key, &payload)) {
                Ok(()) => {}
                Err(DurableError::Store(message)) => {
                    reported = Some(message);
                    break;
                }
                Err(other) => panic!("{other:?}"),
            }
        }
        let reported = reported.or_else(|| store.flush().err().map(|e| e.to_string()));
        assert!(reported.is_some(), "the full disk was not reported");
        let stats = store.stats().unwrap();
        assert!(stats.sink_failures > 0 && stats.durable_seq >= durable);
        println!("failing: {}", reported.unwrap());
        if std::env::var(CRASH_ENV).is_ok() {
            std::thread::sleep(Duration::from_secs(60));
        }
        limit_file_size(u64::MAX);
        let deadline = Instant::now() + Duration::from_secs(20);
        while store.flush().ok() != Some(store.stats().unwrap().last_seq) {
            assert!(Instant::now() < deadline, "the commits did not resume");
            std::thread::sleep(ms(10));
        }
        println!("resumed: {} timers", store.stats().unwrap().timers);
    }

    /// Runs the child on `path` and waits for its line saying the failure was reported.
    fn fill(path: &Path, crash: bool) -> (Child, impl Iterator<Item = String>) {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args(["--exact", "full_disk::full_disk_child_entry", "--nocapture"])
            .env(STORE_ENV, path)
            .stdout(Stdio::piped());
        if crash {
            command.env(CRASH_ENV, "1");
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map_while(Result::ok);
        let failing = lines.by_ref().find(|l| l.starts_with("failing"));
        assert!(failing.is_some(), "the child did not see the failure");
        (child, lines)
    }

    /// How many timers the store at `path`, opened once before, holds: all it journalled
    /// (an add each, and the generation of epochs of each open, this one's included).
    fn stored_timers(path: &Path) -> u64 {
        let stats = open(path).stats().unwrap();
        assert_eq!(
            stats.timers + 2,
            stats.last_seq,
            "one add per timer, all there"
        );
        stats.timers
    }

    #[test]
    fn a_full_disk_is_reported_and_the_commits_resume_when_space_returns() {
        let dir = TempDir::new("full-disk");
        let path = dir.file("t.db");
        let (mut child, mut lines) = fill(&path, false);
        let resumed = lines.find(|l| l.starts_with("resumed"));
        assert!(child.wait().unwrap().success(), "{resumed:?}");
        let count: u64 = resumed.unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        assert!(count > BEFORE);
        assert_eq!(stored_timers(&path), count, "every change made is there");
    }

    #[test]
    fn a_crash_while_the_disk_is_full_loses_nothing_durable() {
        let dir = TempDir::new("full-disk-crash");
        let path = dir.file("t.db");
        let (mut child, _) = fill(&path, true);
        child.kill().unwrap();
        child.wait().unwrap();
        use timerwheel_core::durable::{Sink, SqliteSink};
        let snapshot = SqliteSink::open(&path).unwrap().load().unwrap();
        for key in 0..BEFORE {
            assert!(snapshot.timers.contains_key(&(key, "charge".to_owned())));
        }
    }
}
