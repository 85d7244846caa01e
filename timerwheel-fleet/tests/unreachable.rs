//! PostgreSQL stopped under a running node (`pg_ctl stop -m immediate`) and started again:
//! the changes made meanwhile wait in the node's bounded buffer (a clear status for each,
//! a clear error past the bound) and are written once it answers; the node stops firing a
//! TTL after it lost contact and resumes under new epochs; nothing is lost, and no fire is
//! handed to its handler twice under one epoch.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{add_charge, connect, fleet_server, keys, now_ms, start_runner, wait_for, Log};
use timerwheel_core::durable::Ack;
use timerwheel_fleet::{
    ConnectOptions, FleetError, NewTimer, NodeEvent, Outcome, Runner, Settings, Status,
};

const SHARDS: i32 = 8;

/// Tokens (with their epochs) handed to the handler more than once.
fn twice_under_one_epoch(log: &Log) -> Vec<String> {
    let mut seen = BTreeMap::new();
    for (fire, _) in log.lock().unwrap().iter() {
        *seen.entry(format!("{:?}", fire.token)).or_insert(0) += 1;
    }
    seen.into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(t, _)| t)
        .collect()
}

fn charge(key: u64, due_ms: i64) -> NewTimer<'static> {
    NewTimer {
        key,
        name: "charge",
        payload: b"",
        due_ms,
        period_ms: 0,
        replace: false,
    }
}

fn count(db: &mut postgres::Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).unwrap().get(0)
}

/// Its fires held for a later ack, PostgreSQL stopped and started within the TTL (the
/// leases survive): the node reads its unacknowledged fires again after the broken
/// connection, and must not hand them to the handler a second time under the same epoch.
#[test]
fn a_restart_within_the_ttl_hands_no_fire_twice_to_its_handler_under_one_epoch() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let settings = Settings {
        ttl: Duration::from_secs(8),
        poll: Duration::from_millis(200),
        ..Settings::default()
    };
    let (runner, log) = start_runner(&server, SHARDS, settings, Ack::Later);
    for key in 0..20 {
        add_charge(&mut db, SHARDS, key, now_ms());
    }
    wait_for("20 fires", Duration::from_secs(20), || {
        keys(&log).len() == 20
    });
    let leases = runner.firing();

    server.stop(); // the poll's claims fail meanwhile: the node cannot tell what committed
    std::thread::sleep(Duration::from_millis(700));
    server.start_again();
    std::thread::sleep(Duration::from_millis(2_500)); // the firer reconnects, reads again
    let mut db = connect(&server);
    assert_eq!(runner.firing(), leases, "the leases survived (same epochs)");
    assert_eq!(
        twice_under_one_epoch(&log),
        Vec::<String>::new(),
        "handed to the handler twice under one epoch"
    );
    let tokens: Vec<_> = log
        .lock()
        .unwrap()
        .iter()
        .map(|(f, _)| f.token.clone())
        .collect();
    assert_eq!(runner.ack(&tokens).unwrap(), 20);
    assert_eq!(count(&mut db, "SELECT count(*) FROM tw_fleet_fires"), 0);
    runner.leave().unwrap();
}

/// PostgreSQL stopped past the TTL: the node stops firing; adds, a reset and a delete made
/// meanwhile are buffered (each says so, with the cause and without the connection
/// string), the bound refuses the next one and keeps nothing of it, bad input is refused;
/// once the server is back the node writes the buffer with no call from the application,
/// takes its shards under new epochs and fires what fell due meanwhile, each timer once.
#[test]
fn postgres_stopped_past_the_ttl_the_changes_wait_in_the_bounded_buffer_and_none_is_lost() {
    let server = fleet_server(SHARDS);
    let conninfo = server.conninfo();
    let settings = Settings {
        ttl: Duration::from_secs(1),
        poll: Duration::from_millis(200),
        buffer: 5,
        ..Settings::default()
    };
    let (runner, log) = start_runner(&server, SHARDS, settings, Ack::Now);
    let far = now_ms() + 3_600_000;
    for (key, due) in [(1, now_ms() + 200), (2, far), (3, far)] {
        let status = runner.add(&charge(key, due)).unwrap();
        assert!(
            matches!(status, Status::Written(Outcome::Added { .. })),
            "{status:?}"
        );
    }
    wait_for("key 1 fired", Duration::from_secs(10), || keys(&log) == [1]);
    let epoch_before = runner.firing().iter().map(|(_, e)| *e).max().unwrap();

    server.stop();
    let stopped = Instant::now();
    wait_for("firing stopped", Duration::from_secs(10), || {
        runner.firing().is_empty()
    });
    let stopped_after = stopped.elapsed();
    assert!(
        stopped_after < Duration::from_secs(3),
        "fired {stopped_after:?} without contact"
    );

    let soon = now_ms() + 300; // falls due while the server is down
    let changes = [
        runner.reset(2, "charge", soon),
        runner.delete(3, "charge"),
        runner.add(&charge(4, soon)),
        runner.add(&charge(5, now_ms() + 3_000)),
        runner.add(&charge(6, soon)),
    ];
    for (i, status) in changes.into_iter().enumerate() {
        match status {
            Ok(Status::Buffered { pending, cause }) => {
                assert_eq!(pending, i + 1);
                assert!(!cause.is_empty() && !cause.contains(&conninfo), "{cause}");
            }
            other => panic!("change {i}: {other:?}"),
        }
    }
    let full = runner.add(&charge(7, soon)).unwrap_err();
    assert!(
        matches!(full, FleetError::BufferFull { bound: 5, .. }),
        "{full:?}"
    );
    assert!(full.to_string().contains("5 unwritten changes"), "{full}");
    assert!(!full.to_string().contains(&conninfo), "{full}");
    let bad = runner.add(&NewTimer {
        name: "",
        ..charge(8, soon)
    });
    assert!(matches!(bad, Err(FleetError::Invalid(_))), "{bad:?}");
    match runner.flush_changes() {
        Err(FleetError::Unreachable { pending: 5, cause }) => assert!(!cause.contains(&conninfo)),
        other => panic!("flush while down: {other:?}"),
    }
    assert_eq!(runner.pending_changes(), 5);
    assert!(
        stopped.elapsed() < Duration::from_secs(8),
        "the calls waited for the server"
    );
    std::thread::sleep(Duration::from_millis(600)); // keys 2, 4 and 6 fall due meanwhile
    assert_eq!(keys(&log), [1], "fired without contact");

    server.start_again();
    wait_for("the buffer written", Duration::from_secs(20), || {
        runner.pending_changes() == 0
    });
    wait_for("keys 2, 4, 5, 6 fired", Duration::from_secs(20), || {
        keys(&log).len() >= 5
    });
    std::thread::sleep(Duration::from_millis(1_000));
    let fired = log.lock().unwrap().clone();
    let mut fired_keys = keys(&log);
    fired_keys.sort_unstable();
    assert_eq!(
        fired_keys,
        [1, 2, 4, 5, 6],
        "each timer once; 3 deleted, 7 refused"
    );
    for (fire, _) in fired.iter().skip(1) {
        assert!(
            fire.token.shard_epoch > epoch_before,
            "resumed under an old epoch: {fire:?}"
        );
    }
    let reset = fired.iter().find(|(f, _)| f.token.key == 2).unwrap();
    assert_eq!(reset.0.token.occurrence_ms, soon, "the reset was written");
    let mut db = connect(&server);
    let left =
        "SELECT (SELECT count(*) FROM tw_fleet_timers) + (SELECT count(*) FROM tw_fleet_fires)";
    wait_for("every fire acknowledged", Duration::from_secs(10), || {
        count(&mut db, left) == 0
    });
    let never: BTreeSet<u64> = [3, 7, 8].into();
    assert!(keys(&log).iter().all(|k| !never.contains(k)));
    runner.leave().unwrap();
}

/// A paused postmaster (SIGSTOP) accepts the TCP connection and never answers: a node's
/// connection attempt is cut off by its connect timeout (a TTL) with a clear error, and
/// works again once the server resumes.
#[test]
fn a_connection_to_a_paused_postmaster_ends_at_the_connect_timeout() {
    let server = fleet_server(SHARDS);
    let pid = std::fs::read_to_string(server.data_dir().join("postmaster.pid")).unwrap();
    let pid = pid.lines().next().unwrap().to_owned();
    let signal = |name: &str| {
        let status = std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill {name} {pid}");
    };
    let options = timerwheel_fleet::ConnectOptions::parse(&server.conninfo())
        .unwrap()
        .with_connect_timeout(Duration::from_secs(1));
    signal("-STOP");
    let start = Instant::now();
    let refused = options.connect().map(|_| ());
    let took = start.elapsed();
    signal("-CONT");
    match refused {
        Err(FleetError::Connect(cause)) => assert!(!cause.contains(&server.conninfo()), "{cause}"),
        other => panic!("connected to a paused server: {other:?}"),
    }
    assert!(took < Duration::from_secs(5), "the attempt took {took:?}");
    assert!(options.connect().is_ok(), "resumed");
}

/// PostgreSQL restarted between two ticks of the node: its leave finds the driver's
/// connection broken, connects again and hands every shard back (it did neither: the
/// leave failed and the node was gone, its shards held until their leases ran out).
#[test]
fn a_leave_right_after_a_restart_hands_every_shard_back() {
    let server = fleet_server(SHARDS);
    let settings = Settings {
        ttl: Duration::from_secs(30), // no tick between the restart and the leave
        ..Settings::default()
    };
    let (runner, _log) = start_runner(&server, SHARDS, settings, Ack::Now);
    server.restart();
    runner.leave().expect("the leave, over a new connection");
    let mut db = connect(&server);
    let owned: i64 = db
        .query_one(
            "SELECT count(*) FROM tw_fleet_shards WHERE owner IS NOT NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(owned, 0, "shards still held after the leave");
}

/// Adds buffered while PostgreSQL is down are written together once it answers, each with
/// the outcome it would have had alone: a (key, name) buffered twice is added once and its
/// second add reported refused; a replace replaces.
#[test]
fn buffered_adds_written_together_keep_each_ones_outcome() {
    let server = fleet_server(SHARDS);
    let events: Arc<Mutex<Vec<NodeEvent>>> = Arc::default();
    let seen = Arc::clone(&events);
    let runner = Runner::builder()
        .observer(move |event| seen.lock().unwrap().push(event.clone()))
        .start(&ConnectOptions::parse(&server.conninfo()).unwrap(), "a")
        .unwrap();
    let far = now_ms() + 3_600_000;
    runner.add(&charge(1, far)).unwrap();

    server.stop();
    let changes = [
        charge(2, far),
        charge(2, far + 1), // the same (key, name) again
        NewTimer {
            replace: true,
            ..charge(1, far + 2)
        },
        charge(3, far),
    ];
    for change in &changes {
        let status = runner.add(change).unwrap();
        assert!(matches!(status, Status::Buffered { .. }), "{status:?}");
    }
    server.start_again();
    wait_for("the buffer written", Duration::from_secs(20), || {
        runner.flush_changes().is_ok()
    });

    let mut db = connect(&server);
    let due = |db: &mut postgres::Client, key: i64| -> i64 {
        db.query_one("SELECT due_ms FROM tw_fleet_timers WHERE key = $1", &[&key])
            .unwrap()
            .get(0)
    };
    assert_eq!(due(&mut db, 1), far + 2, "the replace was written");
    assert_eq!(due(&mut db, 2), far, "the first add of key 2 was written");
    assert_eq!(due(&mut db, 3), far);
    let refusals: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            NodeEvent::Error(m) if m.contains("was refused") => Some(m.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        refusals,
        ["the buffered add (2, \"charge\") was refused: timer (2, \"charge\") exists"]
    );
    drop(runner); // its lease connection may still be reconnecting: a leave could fail
}
