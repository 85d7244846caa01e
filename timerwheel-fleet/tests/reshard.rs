//! The shard-count migration (`set_shard_count`) under a running node, timers in the store
//! before and after it: every timer is re-homed by the hash of its key and fires once, in
//! its new shard, under an epoch above every epoch before; an add made for the old count is
//! refused; bad counts change nothing.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::{add_charge, add_named, connect, fleet_server, keys, now_ms, start_runner, wait_for};
use timerwheel_core::durable::Ack;
use timerwheel_fleet::{
    add_timer, check_schema, set_shard_count, shard_of, FleetError, NewTimer, Settings, Status,
};

const BEFORE: i32 = 8;
const AFTER: i32 = 12;

#[test]
fn a_new_shard_count_rehomes_every_timer_and_each_fires_once_in_its_new_shard() {
    let server = fleet_server(BEFORE);
    let mut db = connect(&server);
    let settings = Settings {
        ttl: Duration::from_secs(1),
        poll: Duration::from_millis(200),
        ..Settings::default()
    };
    let (runner, log) = start_runner(&server, BEFORE, settings, Ack::Now);
    let due = now_ms() + 2_500;
    for key in 0..100 {
        add_charge(&mut db, BEFORE, key, due + key as i64 * 10);
    }
    let periodic = 500;
    add_named(&mut db, BEFORE, (periodic, "charge"), now_ms() + 300, 400);
    wait_for("a periodic point", Duration::from_secs(10), || {
        keys(&log).contains(&periodic)
    });
    let before: i64 = db
        .query_one("SELECT max(epoch) FROM tw_fleet_shards", &[])
        .unwrap()
        .get(0);

    let done = set_shard_count(&mut db, AFTER).unwrap();
    assert_eq!((done.from, done.to), (BEFORE, AFTER));
    assert!(
        done.epoch > before,
        "epochs bumped: {} <= {before}",
        done.epoch
    );
    assert!(done.moved > 0);
    assert_eq!(check_schema(&mut db), Ok(AFTER));
    for row in db
        .query("SELECT key, shard FROM tw_fleet_timers", &[])
        .unwrap()
    {
        let (key, shard): (i64, i32) = (row.get(0), row.get(1));
        assert_eq!(
            shard,
            shard_of(key as u64, AFTER),
            "timer {key} not re-homed"
        );
    }
    let shards: Vec<(i32, i64)> = db
        .query(
            "SELECT shard, epoch FROM tw_fleet_shards ORDER BY shard",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(shards.len(), AFTER as usize);
    assert!(shards.iter().all(|(_, e)| *e >= done.epoch), "{shards:?}");

    // Adds made for the old count are refused and write nothing; the node's own re-read it.
    let stale = NewTimer {
        key: 1_000,
        name: "charge",
        payload: b"",
        due_ms: now_ms(),
        period_ms: 0,
        replace: false,
    };
    let refused = add_timer(&mut db, BEFORE, &stale);
    assert_eq!(
        refused,
        Err(FleetError::ShardCount {
            expected: BEFORE,
            found: AFTER
        })
    );
    let added = runner.add(&NewTimer {
        key: 1_001,
        due_ms: now_ms() + 1_000,
        ..stale
    });
    assert!(matches!(added, Ok(Status::Written(_))), "{added:?}");
    // Bad counts change nothing.
    assert!(matches!(
        set_shard_count(&mut db, 0),
        Err(FleetError::Invalid(_))
    ));
    assert!(matches!(
        set_shard_count(&mut db, AFTER),
        Err(FleetError::Invalid(_))
    ));
    assert_eq!(check_schema(&mut db), Ok(AFTER));

    wait_for(
        "the node on the new shards",
        Duration::from_secs(10),
        || runner.firing().len() == AFTER as usize,
    );
    wait_for("every one-shot fired", Duration::from_secs(20), || {
        keys(&log).iter().filter(|k| **k != periodic).count() >= 101
    });
    std::thread::sleep(Duration::from_millis(800));
    let fired = log.lock().unwrap().clone();
    let mut times: BTreeMap<(u64, i64), usize> = BTreeMap::new();
    for (fire, _) in &fired {
        *times
            .entry((fire.token.key, fire.token.occurrence_ms))
            .or_default() += 1;
        let after = fire.token.shard_epoch > done.epoch;
        if after {
            assert_eq!(
                fire.token.shard,
                shard_of(fire.token.key, AFTER),
                "{fire:?}"
            );
        }
        if fire.token.key != periodic {
            assert!(after, "a one-shot fired before the migration: {fire:?}");
        }
    }
    assert!(times.values().all(|n| *n == 1), "fired twice: {times:?}");
    let one_shots: Vec<u64> = times
        .keys()
        .map(|(k, _)| *k)
        .filter(|k| *k != periodic)
        .collect();
    assert_eq!(one_shots, (0..100).chain([1_001]).collect::<Vec<u64>>());
    let periodic_after = fired
        .iter()
        .filter(|(f, _)| f.token.key == periodic && f.token.shard_epoch > done.epoch)
        .count();
    assert!(
        periodic_after >= 2,
        "the periodic timer goes on in its new shard"
    );
    runner.leave().unwrap();
}

/// A migration started while an add's transaction is open waits for it, then re-homes its
/// timer; an add made for the old count while the migration holds its lock waits and is
/// refused.
#[test]
fn a_migration_waits_for_adds_under_way_and_refuses_those_made_for_the_old_count() {
    let server = fleet_server(BEFORE);
    let (mut adder, mut late) = (connect(&server), connect(&server));
    let timer = |key| NewTimer {
        key,
        name: "charge",
        payload: b"",
        due_ms: 0,
        period_ms: 0,
        replace: false,
    };
    let mut open = adder.transaction().unwrap();
    add_timer(&mut open, BEFORE, &timer(77)).unwrap();
    let migration = {
        let mut db = connect(&server);
        std::thread::spawn(move || set_shard_count(&mut db, AFTER))
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !migration.is_finished(),
        "the migration did not wait for the add"
    );
    let refused = std::thread::spawn(move || add_timer(&mut late, BEFORE, &timer(78)));
    std::thread::sleep(Duration::from_millis(300));
    open.commit().unwrap();
    assert_eq!(migration.join().unwrap().unwrap().to, AFTER);
    assert_eq!(
        refused.join().unwrap(),
        Err(FleetError::ShardCount {
            expected: BEFORE,
            found: AFTER
        })
    );
    let rows: Vec<(i64, i32)> = connect(&server)
        .query("SELECT key, shard FROM tw_fleet_timers", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(rows, [(77, shard_of(77, AFTER))]);
}
