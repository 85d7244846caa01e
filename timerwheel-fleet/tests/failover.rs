//! Failover with real processes: kill -9, SIGSTOP past the lease then SIGCONT, a node
//! joining mid-run. Timing bounds follow the issue (TTL + 1 s); the TTLs are short.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::{connect, epochs, fleet_server, held_by, now_ms, wait_owners, NodeProcess};
use timerwheel_fleet::server::TestServer;

const SHARDS: i32 = 32;

fn add(client: &mut postgres::Client, key: u64, due_ms: i64) {
    support::add_charge(client, SHARDS, key, due_ms);
}

/// Nodes a, b and c with 10 or 11 shards each.
fn three_balanced_nodes(
    server: &TestServer,
    db: &mut postgres::Client,
    ttl: Duration,
) -> Vec<NodeProcess> {
    let nodes: Vec<NodeProcess> = ["a", "b", "c"]
        .iter()
        .map(|n| NodeProcess::spawn(server, n, ttl, false))
        .collect();
    wait_owners(db, Duration::from_secs(60), |o| {
        held_by(o, &["a", "b", "c"])
            .iter()
            .all(|n| (10..=11).contains(n))
    });
    nodes
}

#[test]
fn kill_9_of_a_node_and_the_others_take_its_shards_within_ttl_plus_1s() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let ttl = Duration::from_secs(2);
    let nodes = three_balanced_nodes(&server, &mut db, ttl);
    let before = epochs(&mut db);
    let victim: Vec<i32> = support::live_owners(&mut db)["c"].clone();

    nodes[2].signal("-KILL");
    let took = wait_owners(&mut db, Duration::from_secs(30), |o| {
        held_by(o, &["a", "b"]).iter().sum::<usize>() == SHARDS as usize
    });
    assert!(took <= ttl + Duration::from_secs(1), "took {took:?}");
    let after = epochs(&mut db);
    for shard in victim {
        assert!(
            after[&shard] > before[&shard],
            "shard {shard}'s epoch did not grow"
        );
    }
}

#[test]
fn a_node_stopped_past_its_lease_has_its_late_ack_refused_by_epoch() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let ttl = Duration::from_secs(1);
    let mut a = NodeProcess::spawn(&server, "a", ttl, true);
    wait_owners(&mut db, Duration::from_secs(60), |o| {
        held_by(o, &["a"]) == [SHARDS as usize]
    });
    add(&mut db, 42, now_ms());
    let fired = a.wait_line("fire 42 ", Duration::from_secs(30));
    a.signal("-STOP");

    let b = NodeProcess::spawn(&server, "b", ttl, false);
    wait_owners(&mut db, Duration::from_secs(30), |o| {
        held_by(o, &["b"]) == [SHARDS as usize]
    });
    let again = b.wait_line("fire 42 ", Duration::from_secs(30));
    b.wait_line("ack ok 1", Duration::from_secs(30));
    let (old, new) = (b_epoch(&fired), b_epoch(&again));
    assert!(
        new > old,
        "redelivered under epoch {new}, fired under {old}"
    );
    assert_eq!(
        token(&fired),
        token(&again),
        "the same token, delivered again"
    );

    a.signal("-CONT");
    a.send_ack();
    let refused = a.wait_line("ack refused", Duration::from_secs(30));
    let shard = fired.split(' ').nth(5).unwrap();
    assert_eq!(refused, format!("ack refused {shard} {old}"));
    let unacked: i64 = db
        .query_one("SELECT count(*) FROM tw_fleet_fires", &[])
        .unwrap()
        .get(0);
    assert_eq!(unacked, 0, "b's ack stands");
    assert!(
        !a.lines().iter().any(|l| l.starts_with("ack ok")),
        "a's late ack was taken: {:?}",
        a.lines()
    );
}

/// The epoch of a `fire` line.
/// A node's session stopped inside its fence (the shard rows read `FOR SHARE`, as a claim
/// or an ack holds them) is ended by the server after a TTL idle in that transaction, so the
/// next node takes the shards; without the limit the rows stayed locked, skipped by every
/// take, and no node held them (what a node SIGSTOPped inside a claim showed).
#[test]
fn a_session_stopped_inside_its_fence_does_not_keep_the_shards_from_the_next_node() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let ttl = Duration::from_secs(1);
    let a = NodeProcess::spawn(&server, "a", ttl, false);
    wait_owners(&mut db, Duration::from_secs(60), |o| {
        held_by(o, &["a"]) == [SHARDS as usize]
    });
    // Connected as a node connects (Runner::start), then stopped inside the fence.
    let options = timerwheel_fleet::ConnectOptions::parse(&server.conninfo())
        .unwrap()
        .with_idle_transaction_limit(ttl);
    let mut stopped = options.connect().unwrap();
    let mut fence = stopped.transaction().unwrap();
    let fenced = fence
        .query("SELECT shard FROM tw_fleet_shards FOR SHARE", &[])
        .unwrap();
    assert_eq!(fenced.len(), SHARDS as usize);
    a.signal("-KILL");

    let _b = NodeProcess::spawn(&server, "b", ttl, false);
    let took = wait_owners(&mut db, Duration::from_secs(20), |o| {
        held_by(o, &["b"]) == [SHARDS as usize]
    });
    assert!(took <= 2 * ttl + Duration::from_secs(3), "took {took:?}");
    assert!(
        fence.query("SELECT 1", &[]).is_err(),
        "the stopped session was ended"
    );
}

fn b_epoch(line: &str) -> i64 {
    line.split(' ').nth(6).unwrap().parse().unwrap()
}

/// A `fire` line's token without the shard epoch: key, name, occurrence, version, shard
/// (`fire KEY NAME OCCURRENCE_MS VERSION SHARD EPOCH LATE_US`).
fn token(line: &str) -> String {
    let fields: Vec<&str> = line.split(' ').collect();
    fields[..6].join(" ")
}

#[test]
fn a_node_joining_mid_run_gets_shards_without_waiting_for_expiry_and_nothing_fires_twice() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let ttl = Duration::from_secs(10); // a renews every 2 s: b's shards come at a's ticks
    let a = NodeProcess::spawn(&server, "a", ttl, false);
    wait_owners(&mut db, Duration::from_secs(60), |o| {
        held_by(o, &["a"]) == [SHARDS as usize]
    });
    let start = now_ms();
    let timers = 600u64;
    for key in 0..timers {
        add(&mut db, key, start + 3_000 + (key as i64 % 100) * 100); // over 3 to 13 s
    }
    let b = NodeProcess::spawn(&server, "b", ttl, false);
    let took = wait_owners(&mut db, Duration::from_secs(20), |o| {
        held_by(o, &["a", "b"]) == [16, 16]
    });
    // a renews all along: its leases never expire, every shard b has was handed over.
    assert!(took < ttl, "handover took {took:?}");

    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut fired: BTreeMap<u64, usize> = BTreeMap::new();
    while fired.len() < timers as usize && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        fired.clear();
        for fire in a.fires().into_iter().chain(b.fires()) {
            *fired.entry(fire.key).or_default() += 1;
        }
    }
    assert_eq!(fired.len(), timers as usize, "timers lost");
    let twice: Vec<_> = fired.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "fired twice: {twice:?}");
    assert!(!b.fires().is_empty(), "b fired nothing after joining");
    a.leave();
    b.leave();
}

#[test]
fn postgres_restarted_mid_run_the_node_reconnects_and_nothing_is_lost() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let a = NodeProcess::spawn(&server, "a", Duration::from_secs(2), false);
    wait_owners(&mut db, Duration::from_secs(60), |o| {
        held_by(o, &["a"]) == [SHARDS as usize]
    });
    let start = now_ms();
    let timers = 200u64;
    for key in 0..timers {
        add(&mut db, key, start + (key as i64 % 50) * 60); // over 3 s
    }
    std::thread::sleep(Duration::from_millis(1_000));
    server.restart();
    a.wait_line("reconnected", Duration::from_secs(60));

    let mut db = connect(&server);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left: i64 = db
            .query_one(
                "SELECT (SELECT count(*) FROM tw_fleet_timers)
                      + (SELECT count(*) FROM tw_fleet_fires)",
                &[],
            )
            .unwrap()
            .get(0);
        if left == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} timers or fires left"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let fired: std::collections::BTreeSet<u64> = a.fires().iter().map(|f| f.key).collect();
    assert_eq!(fired.len(), timers as usize, "timers lost");
}

/// Three nodes run one-shot and periodic timers; one is killed mid-run. The others fire its
/// timers within TTL + 1 s of their due time, every point falls due and is fired (twice only
/// when the killed node had fired it without its ack, then under a newer epoch), and every
/// fire ends acknowledged by a live owner.
#[test]
fn kill_9_of_a_node_and_the_others_fire_its_timers_within_ttl_plus_1s_every_point_once_acked() {
    let server = fleet_server(SHARDS);
    let mut db = connect(&server);
    let ttl = Duration::from_secs(2);
    let nodes = three_balanced_nodes(&server, &mut db, ttl);
    let start = now_ms() + 1_000;
    let (charges, ticks, period) = (300u64, 20u64, 500i64);
    for key in 0..charges {
        add(&mut db, key, start + (key as i64 * 6_000) / charges as i64); // over 6 s
    }
    for key in charges..charges + ticks {
        support::add_named(&mut db, SHARDS, (key, "idle"), start, period);
    }
    std::thread::sleep(Duration::from_millis(2_500));
    let killed_at = now_ms();
    nodes[2].signal("-KILL");
    let end = start + 6_000 + ttl.as_millis() as i64 + 2_000;
    std::thread::sleep(Duration::from_millis((end - now_ms()).max(0) as u64));
    db.execute("DELETE FROM tw_fleet_timers WHERE name = 'idle'", &[])
        .unwrap();
    wait_for_no_unacked_fires(&mut db);

    let fires: Vec<support::Fired> = nodes.iter().flat_map(|n| n.fires()).collect();
    let victim: Vec<_> = nodes[2].fires();
    let mut first: BTreeMap<(u64, i64), i64> = BTreeMap::new();
    let mut deliveries: BTreeMap<(u64, i64), Vec<&support::Fired>> = BTreeMap::new();
    for fire in &fires {
        let at = first
            .entry((fire.key, fire.occurrence_ms))
            .or_insert(i64::MAX);
        *at = (*at).min(fire.at_ms);
        deliveries
            .entry((fire.key, fire.occurrence_ms))
            .or_default()
            .push(fire);
    }
    for key in 0..charges {
        let due = start + (key as i64 * 6_000) / charges as i64;
        assert!(first.contains_key(&(key, due)), "charge {key} never fired");
    }
    for key in charges..charges + ticks {
        for point in (start..end - 1_000).step_by(period as usize) {
            assert!(
                first.contains_key(&(key, point)),
                "tick {key} at {point} lost"
            );
        }
    }
    let early: Vec<_> = fires.iter().filter(|f| f.at_ms < f.occurrence_ms).collect();
    assert!(early.is_empty(), "fired early: {early:?}");
    let bound = ttl.as_millis() as i64 + 1_000;
    let late: Vec<_> = first
        .iter()
        .filter(|((_, due), at)| *at - *due > bound)
        .collect();
    assert!(late.is_empty(), "fired later than TTL + 1 s: {late:?}");
    for (point, list) in &deliveries {
        if list.len() > 1 {
            let by_victim = list.iter().filter(|f| victim.contains(f)).count();
            let max_epoch = list.iter().map(|f| f.epoch).max().unwrap();
            let min_epoch = list.iter().map(|f| f.epoch).min().unwrap();
            assert!(
                by_victim == 1 && list.len() == 2 && max_epoch > min_epoch,
                "{point:?} delivered more than once: {list:?}"
            );
        }
    }
    let taken: Vec<_> = nodes[..2]
        .iter()
        .flat_map(|n| n.fires())
        .filter(|f| f.at_ms > killed_at && victim.iter().any(|v| v.shard == f.shard))
        .collect();
    assert!(
        !taken.is_empty(),
        "nothing of the killed node's shards fired after it"
    );
}

fn wait_for_no_unacked_fires(db: &mut postgres::Client) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left: i64 = db
            .query_one("SELECT count(*) FROM tw_fleet_fires", &[])
            .unwrap()
            .get(0);
        if left == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} fires never acknowledged"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
